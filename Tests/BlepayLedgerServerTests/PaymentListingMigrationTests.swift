import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Testing

/// Payments made before they kept their creation time: after the migration an open one is listed at its creation, a
/// paid one no later than its payment, and both are listed by merchant and by payer; on both databases.
@Suite struct PaymentListingMigrationTests {
    @Test(arguments: StorageKind.allCases)
    func paymentsMadeBeforeTheMigrationAreListedAtTheirCreation(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let paid = try ledger.request(by: cafe, amount: 1_000)
            let created = try await cafe.client.createPayment(paid)
            try await Task.sleep(for: .milliseconds(20))
            let accepted = try await cafe.client.accept(try ledger.acceptance(of: paid, by: alice), request: nil)
            let open = try ledger.request(by: cafe, amount: 300)
            let opened = try await cafe.client.createPayment(open)

            try await ledger.storage.storage.write { tx in try Self.undoListing(tx) }
            try await ledger.storage.storage.migrate()
            let times = try await ledger.storage.storage.read { tx in
                try tx.rows("SELECT id, created_at FROM payments", []).reduce(into: [String: UInt64]()) { times, row in
                    times[try row.text(0)] = UInt64(try row.integer(1))
                }
            }
            #expect(times[open.paymentID.description] == opened.history.first?.at)
            let paidAt = try #require(times[paid.paymentID.description])
            let (createdAt, acceptedAt) = (try #require(created.history.first?.at), try #require(accepted.history.last?.at))
            #expect(createdAt <= paidAt && paidAt <= acceptedAt)

            let listed = try await cafe.client.payments().data.map(\.id)
            #expect(listed == [open, paid].map(\.paymentID.description))
            #expect(try await alice.client.payments().data.map(\.id) == [paid.paymentID.description])
        }
    }

    /// Takes a database back to before payments kept their creation time (and the listing's indexes). The migration
    /// tests of earlier schemas go back through it too.
    static func undoListing(_ tx: any SQLTransaction) throws {
        for index in ["payments_merchant_created", "payments_customer_created", "pre_authorization_uses_merchant_settled",
            "pre_authorizations_account"]
        {
            try tx.run("DROP INDEX \(index)", [])
        }
        try tx.run("ALTER TABLE payments DROP COLUMN created_at", [])
        try tx.run("DELETE FROM schema_version WHERE version > 8", [])
    }
}
