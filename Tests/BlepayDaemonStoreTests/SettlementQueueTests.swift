import BlepayDaemonStore
import BlepayProtocol
import Foundation
import Testing

/// The business's offline payments on a real SQLite file: kept before they are reported, sent in batches that are
/// resent item for item under one key until answered, and ended only by the ledger's answer.
@Suite struct SettlementQueueTests {
    let f: WalletFixture

    init() throws { f = try WalletFixture() }

    func queue() throws -> SettlementQueue { SettlementQueue(store: try DaemonStore(path: f.path)) }

    func pair(_ amount: UInt64, tip: UInt64 = 0, id: PaymentID = .random())
        throws -> (PaymentRequest, PaymentAcceptance)
    {
        try f.pair(amount, tip: tip, id: id)
    }

    @Test func aBatchIsHandedOutAgainUnchangedUntilItsAnswerCloses() throws {
        let (r1, a1) = try pair(1_000)
        let (r2, a2) = try pair(250, tip: 50)
        try queue().enqueue(r1, a1, at: f.now)
        try queue().enqueue(r2, a2, at: f.later(minutes: 1))
        let first = try #require(try queue().batch(at: f.later(minutes: 2)))
        #expect(first.items.map(\.request.paymentID) == [r1.paymentID, r2.paymentID])
        #expect(first.items.map(\.acceptance) == [a1, a2])

        // Queued while the batch is out: it waits for the next one. A new process gets the same batch back.
        let (r3, a3) = try pair(700)
        try queue().enqueue(r3, a3, at: f.later(minutes: 3))
        #expect(try queue().batch(at: f.later(minutes: 4)) == first)
        #expect(try queue().summary() == .init(count: 3, totals: ["EUR": 2_000], oldest: f.now))

        // Settled, refused, and one the ledger could not decide yet: it goes out again, under a new key.
        try queue().close(first, outcomes: [r1.paymentID: .settled], at: f.later(minutes: 5))
        #expect(try queue().outcome(of: r1.paymentID) == .settled)
        #expect(try queue().outcome(of: r2.paymentID) == nil)
        let second = try #require(try queue().batch(at: f.later(minutes: 6)))
        #expect(second.idempotencyKey != first.idempotencyKey)
        #expect(Set(second.items.map(\.request.paymentID)) == [r2.paymentID, r3.paymentID])
        try queue().close(second, outcomes: [r2.paymentID: .refused("voucher_voided"), r3.paymentID: .settled], at: f.later(minutes: 7))
        #expect(try queue().outcome(of: r2.paymentID) == .refused("voucher_voided"))
        #expect(try queue().batch(at: f.later(minutes: 8)) == nil)
        #expect(try queue().summary() == .init(count: 0, totals: [:], oldest: nil))
    }

    /// What `ListSettlements` shows: each waiting payment (oldest first) as waiting or in the unanswered batch, then
    /// the ledger's verdicts, newest first, with when they were stored.
    @Test func entriesShowEachPaymentsStateFromKeptToDecided() throws {
        let pairs = try [pair(1_000), pair(250, tip: 50), pair(700)]
        for (minute, (request, acceptance)) in pairs.enumerated() {
            try queue().enqueue(request, acceptance, at: f.later(minutes: UInt64(minute)))
        }
        let ids = pairs.map(\.0.paymentID)
        func states() throws -> [PaymentID: SettlementQueue.Entry.State] {
            Dictionary(uniqueKeysWithValues: try queue().entries().map { ($0.request.paymentID, $0.state) })
        }
        #expect(try queue().entries().map(\.request.paymentID) == ids)
        #expect(try queue().entries().map(\.queuedAt) == [f.now, f.later(minutes: 1), f.later(minutes: 2)])
        #expect(try states() == [ids[0]: .waiting, ids[1]: .waiting, ids[2]: .waiting])

        let batch = try #require(try queue().batch(at: f.later(minutes: 3)))
        #expect(try states() == [ids[0]: .sending, ids[1]: .sending, ids[2]: .sending])
        try queue().close(batch, outcomes: [ids[0]: .settled, ids[1]: .refused("voucher_voided")], at: f.later(minutes: 4))
        let entries = try queue().entries()
        #expect(entries.map(\.request.paymentID) == [ids[2], ids[0], ids[1]] || entries.map(\.request.paymentID) == [ids[2], ids[1], ids[0]])
        #expect(try states() == [
            ids[0]: .ended(.settled, at: f.later(minutes: 4)), ids[1]: .ended(.refused("voucher_voided"), at: f.later(minutes: 4)),
            ids[2]: .waiting,
        ])
        #expect(entries.first?.acceptance == pairs[2].1)
        #expect(try queue().entries(ended: 1).count == 2)

        // One payment read back by id, from a new process, whatever its state: what a result is given again from.
        let settled = try #require(try queue().entry(of: ids[0]))
        #expect(settled.request == pairs[0].0 && settled.acceptance == pairs[0].1)
        #expect(settled.queuedAt == f.now && settled.state == .ended(.settled, at: f.later(minutes: 4)))
        #expect(try queue().entry(of: ids[2])?.state == .waiting)
        #expect(try queue().entry(of: .random()) == nil)
    }

    @Test func aPaymentIsKeptOnceAndAnotherAcceptanceOfItIsRefused() throws {
        let (request, acceptance) = try pair(1_000)
        try queue().enqueue(request, acceptance, at: f.now)
        try queue().enqueue(request, acceptance, at: f.later(minutes: 1))
        let (_, other) = try pair(1_000, tip: 100, id: request.paymentID)
        let error = #expect(throws: QueueError.self) { try queue().enqueue(request, other, at: f.now) }
        #expect(error?.code == .conflict)
        let (_, foreign) = try pair(1_000)
        #expect(throws: QueueError.self) { try queue().enqueue(request, foreign, at: f.now) }
        #expect(try queue().summary().count == 1)
    }

    @Test func theMerchantsLimitsOnWhatWaitsRefuseThePaymentThatWouldPassThem() throws {
        let limits = SettlementQueue.Limits(maximumCount: 3, maximumTotalMinorUnits: 2_000, maximumAgeMilliseconds: 3_600_000)
        func keep(_ amount: UInt64, at minute: UInt64) throws -> PaymentID {
            let (request, acceptance) = try pair(amount)
            try queue().enqueue(request, acceptance, at: f.later(minutes: minute), limits: limits)
            return request.paymentID
        }
        func refusal(_ amount: UInt64, at minute: UInt64) throws -> String? {
            let error = #expect(throws: QueueError.self) { _ = try keep(amount, at: minute) }
            return error.map { "\($0.code.rawValue): \($0.message)" }
        }
        let first = try keep(1_500, at: 0)
        #expect(try refusal(501, at: 1) == "queue.limit-reached: 1500 EUR waits for the ledger already")
        _ = try keep(500, at: 1)
        // Another currency's total is its own; the count is every currency's.
        let (request, acceptance) = try pair(1)
        let usd = try PaymentAcceptance(
            paymentID: request.paymentID, amount: try Money(minorUnits: 900, currency: Currency("USD")), tipMinorUnits: 0,
            instrumentID: "card-1", delegatedInstrument: false, createdAt: f.now, requestHash: acceptance.requestHash,
            sessionHash: acceptance.sessionHash, customerKey: f.deviceKey, preAuthorization: nil, signature: .unsigned)
        try queue().enqueue(request, usd, at: f.later(minutes: 2), limits: limits)
        #expect(try refusal(1, at: 3) == "queue.limit-reached: 3 payments wait for the ledger already")
        #expect(try queue().summary().count == 3)

        // Once the ledger settled some, there is room again, until the oldest waiting is an hour old.
        let batch = try #require(try queue().batch(at: f.later(minutes: 4)))
        try queue().close(batch, outcomes: [first: .settled], at: f.later(minutes: 5))
        _ = try keep(10, at: 6)
        try queue().close(
            try #require(try queue().batch(at: f.later(minutes: 7))), outcomes: [request.paymentID: .settled], at: f.later(minutes: 7))
        #expect(try refusal(10, at: 61) == "queue.limit-reached: the oldest payment has waited too long for the ledger")
    }

    @Test func aVoucherUseOrRangeAcceptedBeforeIsRefusedAsADoubleSpend() throws {
        let voucher = try f.voucher(5_000)
        func presenting(_ sequence: UInt32, spentBefore: UInt64, _ amount: UInt64) throws -> (PaymentRequest, PaymentAcceptance) {
            let (request, plain) = try pair(amount)
            let acceptance = try PaymentAcceptance(
                paymentID: plain.paymentID, amount: plain.amount, tipMinorUnits: 0, instrumentID: "card-1",
                delegatedInstrument: false, createdAt: f.now, requestHash: plain.requestHash, sessionHash: plain.sessionHash,
                customerKey: f.deviceKey,
                preAuthorization: try PreAuthorizationPresentation(voucher: voucher, sequence: sequence, spentBeforeMinorUnits: spentBefore),
                signature: .unsigned)
            return (request, acceptance)
        }
        func reused(_ pair: (PaymentRequest, PaymentAcceptance)) -> QueueError.Code? {
            #expect(throws: QueueError.self) { try queue().enqueue(pair.0, pair.1, at: f.now) }?.code
        }
        let first = try presenting(1, spentBefore: 0, 1_000)
        try queue().enqueue(first.0, first.1, at: f.now)
        try queue().enqueue(first.0, first.1, at: f.now)  // the same pair again: nothing new
        #expect(reused(try presenting(1, spentBefore: 1_000, 500)) == .voucherReused)  // the same use
        #expect(reused(try presenting(2, spentBefore: 999, 500)) == .voucherReused)  // overlapping the first's range
        let second = try presenting(2, spentBefore: 1_000, 500)
        try queue().enqueue(second.0, second.1, at: f.now)
        // Uses signed out of order still fit where they belong.
        let fourth = try presenting(4, spentBefore: 2_000, 100)
        try queue().enqueue(fourth.0, fourth.1, at: f.now)
        #expect(reused(try presenting(3, spentBefore: 1_500, 600)) == .voucherReused)
        let third = try presenting(3, spentBefore: 1_500, 500)
        try queue().enqueue(third.0, third.1, at: f.now)
        #expect(try queue().summary().count == 4)
    }

    /// However large the voucher, the merchant bounds what one device may owe it while the ledger is away; what the
    /// ledger settled no longer counts, and another voucher has a bound of its own.
    @Test func whatWaitsUnderOneVoucherIsBoundedByTheMerchant() throws {
        let limits = SettlementQueue.Limits(
            maximumCount: 100, maximumTotalMinorUnits: 100_000, maximumAgeMilliseconds: 3_600_000, maximumPerVoucherMinorUnits: 1_500)
        let (big, small) = (try f.voucher(50_000), try f.voucher(50_000))
        var spent: [FixedBytes<Bytes8>: (UInt32, UInt64)] = [:]
        func keep(_ amount: UInt64, under voucher: PreAuthorizationVoucher) throws -> PaymentID {
            let (sequence, before) = spent[voucher.voucherID] ?? (0, 0)
            let (request, plain) = try pair(amount)
            let acceptance = try PaymentAcceptance(
                paymentID: plain.paymentID, amount: plain.amount, tipMinorUnits: 0, instrumentID: "card-1",
                delegatedInstrument: false, createdAt: f.now, requestHash: plain.requestHash, sessionHash: plain.sessionHash,
                customerKey: f.deviceKey,
                preAuthorization: try PreAuthorizationPresentation(voucher: voucher, sequence: sequence + 1, spentBeforeMinorUnits: before),
                signature: .unsigned)
            try queue().enqueue(request, acceptance, at: f.now, limits: limits)
            spent[voucher.voucherID] = (sequence + 1, before + amount)
            return request.paymentID
        }
        let first = try keep(1_000, under: big)
        let error = #expect(throws: QueueError.self) { _ = try keep(501, under: big) }
        #expect(error?.code == .limitReached)
        #expect(error?.message == "1000 EUR waits for the ledger under voucher \(big.voucherID) already")
        _ = try keep(500, under: big)
        _ = try keep(1_500, under: small)
        let batch = try #require(try queue().batch(at: f.now))
        try queue().close(batch, outcomes: [first: .settled], at: f.later(minutes: 1))
        _ = try keep(1_000, under: big)
    }

    @Test func aBatchCarriesAtMostTheLedgersLimit() throws {
        for minute in 0..<(SettlementQueue.batchLimit + 5) {
            let (request, acceptance) = try pair(10)
            try queue().enqueue(request, acceptance, at: f.later(minutes: UInt64(minute)))
        }
        let first = try #require(try queue().batch(at: f.now))
        #expect(first.items.count == SettlementQueue.batchLimit)
        try queue().close(first, outcomes: Dictionary(uniqueKeysWithValues: first.items.map { ($0.request.paymentID, .settled) }), at: f.now)
        #expect(try queue().batch(at: f.now)?.items.count == 5)
    }
}
