import BlepayLedger
import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// On PostgreSQL a request's statements are sent together wherever they do not depend on one another's answers
/// (`SQLTransaction.send`): in a complete payment the ledger's threads wait for the database six times, not once
/// for each of its thirty-odd statements.
@Suite struct DatabaseWaitTests {
    @Test func aCompletePaymentWaitsSixTimesOnPostgreSQL() async throws {
        // No expiry sweep between the two counts.
        try await RunningLedger.with(.postgres, configure: { $0.expiryIntervalSeconds = 3600 }) { ledger in
            let postgres = try #require(ledger.storage.storage as? PostgresStorage)
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            // A device's first request is screened with a read of its own (later ones with the device kept).
            _ = try await cafe.client.createPayment(try ledger.request(by: cafe, amount: 100))
            let request = try ledger.request(by: cafe, amount: 1_000)
            let acceptance = try ledger.acceptance(of: request, by: alice)

            let start = postgres.waits
            #expect(try await cafe.client.createPayment(request).status == .authorizationRequired)
            let created = postgres.waits
            // With the request, as the daemons send it: the payment's merchant is known before anything is read.
            #expect(try await alice.client.accept(acceptance, request: request).status == .settled)
            let accepted = postgres.waits
            // Authentication with the idempotency record; the payment (with everything an acceptance is checked
            // against); the writes with COMMIT.
            #expect(created - start == 3)
            #expect(accepted - created == 3)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
