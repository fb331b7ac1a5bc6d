import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerStore
import BlepayProtocol
import Crypto
import Foundation
import LedgerTestSupport
import Testing

/// A ledger upgraded from schema 6, where an account had one never-expiring token hash, device secrets were kept in
/// clear and stored answers carried tokens and secrets: after the upgrade its unused token enrolls one device, its
/// devices keep working, and its sweep seals what was in clear; on both databases.
@Suite struct CredentialMigrationTests {
    @Test(arguments: StorageKind.allCases)
    func anUpgradedLedgerSealsWhatItKeptInClearAndItsTokensEnrollOnce(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 0)
            let bob = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Bob"))
            let bobToken = try #require(bob.enrollmentToken)
            let secretText = try #require(alice.device.secret)
            let secret = [UInt8](try #require(Data(base64Encoded: secretText)))
            let legacyAnswer = Array(#"{"balances":[],"enrollmentToken":"\#(bobToken)","id":"\#(bob.id)","kind":"customer","name":"Bob"}"#.utf8)
            let enrollmentAnswer = try LedgerClient.encode(alice.device)

            // Back to schema 6, as a ledger of then kept it: an answer of the operator's carried the token.
            try await ledger.storage.storage.write { tx in
                try Self.undoCredentials(tx, ledgerKey: ledger.server.ledgerKey)
                try tx.run(
                    """
                    INSERT INTO idempotency_keys (principal, key, parameters_hash, status, response, created_at)
                    VALUES ('admin', 'legacy-account', 'hmac-sha256:00', 201, ?, ?)
                    """, [.blob(legacyAnswer), .integer(Int64(Date().timeIntervalSince1970 * 1000))])
            }
            let (plainSecrets, plainAnswers) = try await ledger.storage.storage.read { tx in
                (try tx.rows("SELECT secret FROM devices", []).map { try $0.blob(0) },
                 try tx.rows("SELECT response FROM idempotency_keys", []).map { try $0.blob(0) })
            }
            #expect(plainSecrets.contains(secret) && plainAnswers.contains(enrollmentAnswer), "in clear before the upgrade")
            // Upgraded as a ledger is: stopped, migrated, started; its first sweep seals what was in clear.
            try await ledger.down { try await ledger.storage.storage.migrate() }
            var kept: (devices: Int64, records: Int64) = (1, 1)
            for _ in 0..<100 where kept != (0, 0) {
                try await Task.sleep(for: .milliseconds(100))
                kept = try await ledger.storage.storage.read { tx in
                    (try tx.row("SELECT COUNT(*) FROM devices WHERE secret_sealed = 0", [])!.integer(0),
                     try tx.row("SELECT COUNT(*) FROM idempotency_keys WHERE sealed = -1", [])!.integer(0))
                }
            }
            #expect(kept.devices == 0 && kept.records == 0)
            let (secrets, answers) = try await ledger.storage.storage.read { tx in
                (try tx.rows("SELECT secret FROM devices", []).map { try $0.blob(0) },
                 try tx.rows("SELECT response FROM idempotency_keys", []).map { String(decoding: try $0.blob(0), as: UTF8.self) })
            }
            #expect(!secrets.contains(secret))
            #expect(!answers.contains { $0.contains(bobToken) || $0.contains(secretText) })
            #expect(answers.contains { $0.contains(#""enrollmentTokenWithheld":true"#) && $0.contains(bob.id) })

            // Alice's device still signs with its secret; Bob's token from before enrolls one device.
            #expect(try await alice.client.ownAccount().id == alice.account.id)
            let enroll = { (name: String) in
                try await ledger.admin.with(.bearer(bobToken)).enroll(
                    RegisterDevice(name: name, signingKey: SigningKey().publicKey.bytes.hex, noiseKey: nil))
            }
            #expect(try await enroll("phone").accountId == bob.id)
            await #expect(throws: LedgerClientError.self) { try await enroll("tablet") }
        }
    }

    /// Takes a database back to schema 7, before refunds.
    static func undoRefunds(_ tx: any SQLTransaction) throws {
        try tx.run("DROP TABLE refunds", [])
        try tx.run("DROP TABLE refund_sequence", [])
        try tx.run("DELETE FROM schema_version WHERE version > 7", [])
    }

    /// Takes a database back to schema 6, before credentials had a lifecycle: each account's token hash in
    /// `accounts`, device secrets and stored answers in clear, nothing blocked or revoked. The migration tests of
    /// earlier schemas go back through it too. (The places a seal is bound to are `LedgerOperations`'.)
    static func undoCredentials(_ tx: any SQLTransaction, ledgerKey: SigningKey) throws {
        try PaymentListingMigrationTests.undoListing(tx)
        try undoRefunds(tx)
        let seal = SecretSeal(ledgerKey: ledgerKey)
        for row in try tx.rows("SELECT id, secret FROM devices WHERE secret_sealed = 1", []) {
            let id = try row.text(0)
            try tx.run("UPDATE devices SET secret = ? WHERE id = ?", [.blob(try seal.open(try row.blob(1), place: "device:\(id)")), .text(id)])
        }
        for row in try tx.rows("SELECT principal, key, response FROM idempotency_keys WHERE sealed = 1", []) {
            let (principal, key) = (try row.text(0), try row.text(1))
            try tx.run("UPDATE idempotency_keys SET response = ? WHERE principal = ? AND key = ?",
                [.blob(try seal.open(try row.blob(2), place: "idempotency:\(principal):\(key)")), .text(principal), .text(key)])
        }
        try tx.run("DROP INDEX devices_unsealed", [])
        try tx.run("DROP INDEX idempotency_keys_unsealed", [])
        let blob = tx.dialect == .postgres ? "BYTEA" : "BLOB"
        try tx.run("ALTER TABLE accounts ADD COLUMN enrollment_token_hash \(blob)", [])
        try tx.run(
            """
            UPDATE accounts SET enrollment_token_hash = (
                SELECT hash FROM enrollment_tokens t WHERE t.account = accounts.id ORDER BY created_at, hash LIMIT 1)
            """, [])
        try tx.run("DROP TABLE enrollment_tokens", [])
        try tx.run("ALTER TABLE accounts DROP COLUMN blocked_at", [])
        try tx.run("ALTER TABLE devices DROP COLUMN revoked_at", [])
        try tx.run("ALTER TABLE devices DROP COLUMN secret_sealed", [])
        try tx.run("ALTER TABLE idempotency_keys DROP COLUMN sealed", [])
        try tx.run("DELETE FROM schema_version WHERE version > 6", [])
    }
}
