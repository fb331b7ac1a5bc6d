import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import LedgerTestSupport
import Testing

/// `GET /v1/changes`: a device's standing call, held until what the device follows (the deny list, the refunds of its
/// payments) changes, so that a daemon waits on it instead of polling.
@Suite struct ChangeFeedTests {
    @Test(arguments: StorageKind.allCases)
    func aHeldCallIsAnsweredWhenTheDenyListOrARefundChanges(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let paid = try await RefundTests.paid(ledger, cafe, alice, amount: 1_000)

            // Without a token, answered at once; with the current one and nothing changing, held for its wait.
            let first = try await cafe.client.changes(after: nil, wait: 60)
            let started = ContinuousClock.now
            #expect(try await cafe.client.changes(after: first.token, wait: 1) == first)
            #expect(ContinuousClock.now - started >= .seconds(1))
            // A payment changes nothing a device follows.
            _ = try await RefundTests.paid(ledger, cafe, bob, amount: 100)
            #expect(try await cafe.client.changes(after: first.token, wait: 0) == first)

            // A voucher voided while calls are held: each is answered with a new token, long before its wait ends.
            let alicesFirst = try await alice.client.changes(after: nil, wait: 0)
            async let cafeHeld = cafe.client.changes(after: first.token, wait: 120)
            async let alicesHeld = alice.client.changes(after: alicesFirst.token, wait: 120)
            try await Task.sleep(for: .milliseconds(500))
            let voiding = ContinuousClock.now
            _ = try await alice.client.voidPreAuthorization(voucher.voucher.voucherID.description)
            let (second, alicesSecond) = try await (cafeHeld, alicesHeld)
            #expect(second != first && alicesSecond != alicesFirst)
            #expect(ContinuousClock.now - voiding < .seconds(60))

            // A refund: its merchant's and its payer's calls are answered; another customer's is not.
            let bobs = try await bob.client.changes(after: nil, wait: 0)
            async let refunded = cafe.client.changes(after: second.token, wait: 120)
            try await Task.sleep(for: .milliseconds(500))
            _ = try await cafe.client.refund(paid.paymentID, CreateRefund(amount: 300, reason: nil), idempotencyKey: "r1")
            #expect(try await refunded != second)
            #expect(try await alice.client.changes(after: alicesSecond.token, wait: 0) != alicesSecond)
            #expect(try await bob.client.changes(after: bobs.token, wait: 0) == bobs)
        }
    }

    @Test func waitIsWholeSecondsUpToFiveMinutesAndTheCallerADevice() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            for wait in [-1, 301] {
                try await RefundTests.expectInvalid("wait") { _ = try await cafe.client.changes(after: nil, wait: wait) }
            }
            try await RefundTests.expectInvalid("wait") { _ = try await cafe.client.get("/v1/changes?wait=soon", as: LedgerChanges.self) }
            #expect(try await ledger.raw("GET", "/v1/changes").status == 401)
        }
    }

    /// Each held call keeps a connection: a device may hold four at a time, and a fifth is answered at once, so that
    /// no device can take the ledger's connections by holding calls.
    @Test func aDeviceHoldsAtMostFourCalls() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let first = try await cafe.client.changes(after: nil, wait: 0)
            let held = (0..<4).map { _ in Task { try await cafe.client.changes(after: first.token, wait: 120) } }
            try await Task.sleep(for: .seconds(1))
            let started = ContinuousClock.now
            #expect(try await cafe.client.changes(after: first.token, wait: 120) == first)
            #expect(ContinuousClock.now - started < .seconds(60))
            // Another device's call is held as ever; the four are answered when something changes.
            let alicesFirst = try await alice.client.changes(after: nil, wait: 0)
            async let alices = alice.client.changes(after: alicesFirst.token, wait: 120)
            try await Task.sleep(for: .milliseconds(500))
            _ = try await alice.client.voidPreAuthorization(voucher.voucher.voucherID.description)
            for call in held { #expect(try await call.value != first) }
            #expect(try await alices != alicesFirst)
        }
    }

    /// While nothing changes a held call costs the ledger nothing: no read, no write, until its wait ends.
    @Test func aHeldCallReadsNothingWhileNothingChanges() async throws {
        try await RunningLedger.withWatched(.sqlite, configure: { $0.expiryIntervalSeconds = 3600 }) { ledger, storage in
            let cafe = try await ledger.merchant()
            let first = try await cafe.client.changes(after: nil, wait: 0)
            let before = storage.writes.load(ordering: .relaxed)
            let held = Task { try await cafe.client.changes(after: first.token, wait: 4) }
            // Held once its one transaction (authentication, with the first read) is done.
            while storage.writes.load(ordering: .relaxed) == before { try await Task.sleep(for: .milliseconds(10)) }
            let (reads, writes) = (storage.reads.load(ordering: .relaxed), storage.writes.load(ordering: .relaxed))
            try await Task.sleep(for: .seconds(2))
            #expect(storage.reads.load(ordering: .relaxed) == reads)
            #expect(storage.writes.load(ordering: .relaxed) == writes)
            #expect(try await held.value == first)
        }
    }

    /// A daemon that restarts, or whose request is cancelled, closes the connection its call was held on: the ledger
    /// stops holding that call at once (over HTTP and over HTTPS), so that it neither keeps the connection open until
    /// the wait ends nor counts the call against the device's four. Four calls gone, a fifth is held as ever.
    @Test(arguments: [false, true])
    func aCallWhoseCallerWentAwayIsNoLongerHeld(https: Bool) async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        try await RunningLedger.with(.sqlite, tls: https ? (authority, try authority.issue()) : nil) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let first = try await cafe.client.changes(after: nil, wait: 0)
            let gone = (0..<4).map { _ in Task { try await cafe.client.changes(after: first.token, wait: 300) } }
            try await Task.sleep(for: .seconds(1))
            for call in gone { call.cancel() }
            for call in gone { await #expect(throws: (any Error).self) { try await call.value } }
            try await Task.sleep(for: .seconds(1))
            async let held = cafe.client.changes(after: first.token, wait: 120)
            try await Task.sleep(for: .milliseconds(500))
            _ = try await alice.client.voidPreAuthorization(voucher.voucher.voucherID.description)
            #expect(try await held != first)
        }
    }

    /// A ledger that stops answers the calls it holds rather than keeping its shutdown waiting on them.
    @Test func aStoppingLedgerAnswersTheCallsItHolds() async throws {
        let ledger = try await RunningLedger.start(.sqlite)
        let cafe = try await ledger.merchant()
        let first = try await cafe.client.changes(after: nil, wait: 0)
        let held = Task { try await cafe.client.changes(after: first.token, wait: 300) }
        try await Task.sleep(for: .milliseconds(500))
        let stopping = ContinuousClock.now
        try await ledger.stop()
        #expect(ContinuousClock.now - stopping < .seconds(60))
        #expect(try await held.value == first)
    }
}
