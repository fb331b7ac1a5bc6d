import BlepayLedger
import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// On PostgreSQL a request's statements are sent together wherever they do not depend on one another's answers
/// (`SQLTransaction.send`): in a complete payment the ledger's threads wait for the database six times, not once
/// for each of its statements; and its statements are 22, not 31 (the acceptance's checks one statement, and the
/// writes before each COMMIT merged).
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

            let start = (postgres.waits, postgres.statements)
            #expect(try await cafe.client.createPayment(request).status == .authorizationRequired)
            let created = (postgres.waits, postgres.statements)
            // With the request, as the daemons send it: the payment's merchant is known before anything is read.
            #expect(try await alice.client.accept(acceptance, request: request).status == .settled)
            let accepted = (postgres.waits, postgres.statements)
            // Authentication with the idempotency record; the payment (with everything an acceptance is checked
            // against); the writes with COMMIT.
            #expect(created.0 - start.0 == 3)
            #expect(accepted.0 - created.0 == 3)
            // BEGIN, the idempotency record, the device, the nonce, the payment, SAVEPOINT, the payment and the
            // idempotency record written together, COMMIT.
            #expect(created.1 - start.1 == 8)
            // BEGIN, the idempotency record, the device, the nonce, the payment; the merchant, payer, double spends
            // and instrument together; the books, both balances, the hold; SAVEPOINT; the payer, the instrument's
            // balance, the transfer, the hold, the payment and the idempotency record written together; the
            // merchant's balance; COMMIT.
            #expect(accepted.1 - created.1 == 14)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
