import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// A copy of the ledger's database gives nothing away that pays or enrolls: searched byte by byte (the SQLite file
/// and its log; every PostgreSQL table as text), it holds no device secret, no enrollment token, no card number and
/// no CVC, after enrollments, a card added and a payment made.
@Suite struct SecretsAtRestTests {
    @Test(arguments: StorageKind.allCases)
    func cardDataAndSecretsAreAbsentFromTheDatabase(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let spare = try await ledger.admin.issueEnrollmentToken(for: alice.account.id)
            var secrets: [(String, [UInt8])] = []
            for party in [cafe, alice] {
                let text = try #require(party.device.secret)
                let secret = [UInt8](try #require(Data(base64Encoded: text)))
                secrets.append(("secret of \(party.device.id)", secret))
                secrets.append(("secret of \(party.device.id), base64", Array(text.utf8)))
                secrets.append(("secret of \(party.device.id), hex", Array(secret.hex.utf8)))
                secrets.append(("token of \(party.account.id)", Array(try #require(party.account.enrollmentToken).utf8)))
            }
            secrets.append(("a fresh token", Array(try #require(spare.token).utf8)))
            try await Self.expectAbsent(secrets, ledger)

            let card = try await alice.client.addInstrument(CreateInstrument(card: .init(
                number: "5555555555554444", expiryMonth: 11,
                expiryYear: Calendar(identifier: .gregorian).component(.year, from: Date()) + 2, cvc: "987")))
            _ = try await ledger.admin.deposit(Deposit(amount: 5_000, currency: "EUR"), into: card.id)
            let request = try ledger.request(by: cafe, amount: 1_200)
            _ = try await cafe.client.createPayment(request)
            #expect(try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: nil).status == .settled)
            let cardData: [(String, [UInt8])] = [
                ("a card number", Array("5555555555554444".utf8)), ("another card number", Array("4242424242424242".utf8)),
                ("a CVC field", Array("\"cvc\"".utf8)), ("a CVC", Array("\"987\"".utf8)),
            ]
            try await Self.expectAbsent(secrets + cardData, ledger)
            #expect(try await ledger.server.audit() == [])
        }
    }

    /// Fails for each needle found in the database's bytes (SQLite) or rows (PostgreSQL, bytes shown as hex).
    static func expectAbsent(_ needles: [(String, [UInt8])], _ ledger: RunningLedger) async throws {
        var haystacks: [(String, Data)] = []
        if let path = ledger.storage.sqlitePath {
            for file in [path, path + "-wal"] {
                haystacks.append((file, (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()))
            }
        } else {
            haystacks = try await ledger.storage.storage.read { tx in
                try tx.rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename", [])
                    .map { row in
                        let table = try row.text(0)
                        let text = try tx.rows("SELECT CAST(t AS TEXT) FROM \(table) t", []).map { try $0.text(0) }
                        return (table, Data(text.joined(separator: "\n").lowercased().utf8))
                    }
            }
            #expect(["devices", "idempotency_keys", "instruments"].allSatisfy { table in
                haystacks.contains { $0.0 == table && !$0.1.isEmpty }
            })
        }
        for (name, haystack) in haystacks {
            for (what, needle) in needles {
                let lowered = ledger.storage.sqlitePath == nil ? Array(String(decoding: needle, as: UTF8.self).lowercased().utf8) : needle
                #expect(haystack.range(of: Data(lowered)) == nil, "\(what) is in \(name)")
            }
        }
    }
}
