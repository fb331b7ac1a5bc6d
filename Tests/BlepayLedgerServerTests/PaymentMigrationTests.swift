import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Online payments made while a payment id was unique across merchants: after the migration they keep the names of
/// their hold and transfer (which their receipts carry), an open one still pays, and another merchant's payment of the
/// same id is a payment of its own; on both databases.
@Suite struct PaymentMigrationTests {
    /// The transfer a settled payment's receipt names.
    func transaction(_ payment: PaymentResource) throws -> String? {
        try Receipt(encoded: [UInt8](try #require(payment.receipt.flatMap { Data(base64Encoded: $0) }))).transactionID
    }

    @Test(arguments: StorageKind.allCases)
    func paymentsMadeBeforeTheMigrationKeepTheirNamesAndTheirIdsAreTheirMerchants(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let paid = try ledger.request(by: cafe, amount: 1_000)
            _ = try await cafe.client.createPayment(paid)
            _ = try await cafe.client.accept(try ledger.acceptance(of: paid, by: alice), request: nil)
            let open = try ledger.request(by: cafe, amount: 300)
            _ = try await cafe.client.createPayment(open)

            // Back to schema 5, as a ledger of then paid it: the hold and transfer named by payment id, payments keyed by
            // id alone.
            let id = paid.paymentID.description
            try await ledger.storage.storage.write { tx in
                try CredentialMigrationTests.undoCredentials(tx, ledgerKey: ledger.server.ledgerKey)
                let (integer, blob) = tx.dialect == .postgres ? ("BIGINT", "BYTEA") : ("INTEGER", "BLOB")
                let names = try #require(try tx.row("SELECT hold, transfer FROM payments WHERE merchant = ? AND id = ?",
                    [.text(cafe.account.id), .text(id)]))
                try tx.run("UPDATE holds SET id = ? WHERE id = ?", [.text("hold:\(id)"), .text(try names.text(0))])
                try tx.run("UPDATE transfers SET id = ? WHERE id = ?", [.text("pay:\(id)"), .text(try names.text(1))])
                try tx.run("ALTER TABLE payments RENAME TO payments_now", [])
                try tx.run("DROP INDEX payments_open", [])
                try tx.run("DROP INDEX payments_id", [])
                try tx.run(
                    """
                    CREATE TABLE payments (
                        id TEXT PRIMARY KEY, merchant TEXT NOT NULL REFERENCES accounts(id), request \(blob) NOT NULL,
                        status TEXT NOT NULL, acceptance \(blob), customer TEXT, instrument TEXT, failure \(integer),
                        history \(blob) NOT NULL, expires_at \(integer) NOT NULL, updated_at \(integer) NOT NULL)
                    """, [])
                try tx.run("CREATE INDEX payments_open ON payments (expires_at) WHERE status = 'authorization_required'", [])
                try tx.run(
                    """
                    INSERT INTO payments (id, merchant, request, status, acceptance, customer, instrument, failure, history,
                        expires_at, updated_at)
                    SELECT id, merchant, request, status, acceptance, customer, instrument, failure, history, expires_at,
                        updated_at FROM payments_now
                    """, [])
                try tx.run("DROP TABLE payments_now", [])
                try tx.run("DELETE FROM schema_version WHERE version > 5", [])
            }
            try await ledger.storage.storage.migrate()
            #expect(try await ledger.server.audit() == [])

            // Both keep the names they were given, paid before the migration or after.
            #expect(try transaction(await cafe.client.payment(paid.paymentID)) == "pay:\(id)")
            let late = try await cafe.client.accept(try ledger.acceptance(of: open, by: alice), request: nil)
            #expect(try transaction(late) == "pay:\(open.paymentID)")
            // The bakery's payment of the same id is its own, with a transfer of its own named by time.
            let same = try ledger.request(by: bakery, id: paid.paymentID, amount: 200)
            _ = try await bakery.client.createPayment(same)
            let bakerys = try await bakery.client.accept(try ledger.acceptance(of: same, by: alice), request: nil)
            #expect(try transaction(bakerys).map(TimeOrderedName.isOne) == true)
            #expect(try await cafe.client.payment(paid.paymentID).amount == 1_000)

            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_300)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 200)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
