import BlepayDaemonStore
import BlepayProtocol
import Foundation
import GRDB
import Testing

/// The payment history on a real state file: what each event changes, pages newest first, filters, retention, the
/// upgrade from the schema before it, and refunds.
@Suite struct PaymentHistoryTests {
    @Test func eventsUpdateThePaymentAndAreKeptInOrder() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let (request, _) = try f.pair(1_250)
        try history.record(change(request, "open", at: f.now, kind: "offered"))
        try history.record(change(request, "accepted", at: f.later(minutes: 1), kind: "accepted", total: 1_300))
        try history.record(change(request, "finished", ended: false, at: f.later(minutes: 2), kind: "finished", receipt: receipt(request, .pendingSettlement, f)))
        // A verdict carries no request: it finds the payment by id.
        let settled = receipt(request, .settled, f)
        try history.record(HistoryChange(
            paymentID: request.paymentID, request: nil, status: "settled", ended: true, receipt: settled,
            event: HistoryEvent(kind: "settled", at: f.later(minutes: 3), details: "{}")))
        // A late pending receipt never replaces the settled one.
        try history.record(change(request, "settled", at: f.later(minutes: 4), kind: "settled", receipt: receipt(request, .pendingSettlement, f)))

        let kept = try #require(try history.payment(request.paymentID))
        #expect(kept.payment.status == "settled")
        #expect(kept.payment.ended)
        #expect(kept.payment.totalMinorUnits == 1_300)
        #expect(kept.payment.receipt == settled)
        #expect(kept.payment.request == request)
        #expect(kept.payment.createdAt == f.now)
        #expect(kept.payment.updatedAt == f.later(minutes: 4))
        #expect(kept.events.map(\.kind) == ["offered", "accepted", "finished", "settled", "settled"])
        #expect(kept.events.map(\.at) == [0, 1, 2, 3, 4].map { f.later(minutes: $0) })
    }

    @Test func aVerdictForAPaymentNeverKeptIsDropped() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let id = PaymentID.random()
        try history.record(HistoryChange(
            paymentID: id, request: nil, status: "settled", ended: true, event: HistoryEvent(kind: "settled", at: f.now, details: "{}")))
        #expect(try history.payment(id) == nil)
    }

    @Test func pagesAreNewestFirstAndStableUnderInserts() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        var requests: [PaymentRequest] = []
        for minute in 0..<5 {
            let (request, _) = try f.pair(100 + UInt64(minute))
            requests.append(request)
            try history.record(change(request, "finished", at: f.later(minutes: UInt64(minute)), kind: "finished"))
        }
        let first = try history.list(HistoryQuery(limit: 2))
        #expect(first.payments.map(\.request) == [requests[4], requests[3]])
        // Newer payments kept between pages shift nothing after the cursor.
        try history.record(change(try f.pair(999).0, "open", at: f.later(minutes: 10), kind: "offered"))
        let second = try history.list(HistoryQuery(limit: 2, cursor: first.next))
        #expect(second.payments.map(\.request) == [requests[2], requests[1]])
        let last = try history.list(HistoryQuery(limit: 2, cursor: second.next))
        #expect(last.payments.map(\.request) == [requests[0]])
        #expect(last.next == nil)
    }

    @Test func filtersBySinceUntilAndStatus() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let (early, _) = try f.pair(100)
        let (middle, _) = try f.pair(200)
        let (late, _) = try f.pair(300)
        try history.record(change(early, "finished", at: f.now, kind: "finished"))
        try history.record(change(middle, "cancelled", at: f.later(minutes: 5), kind: "cancelled"))
        try history.record(change(late, "finished", at: f.later(minutes: 10), kind: "finished"))
        let window = try history.list(HistoryQuery(since: f.later(minutes: 1), until: f.later(minutes: 10)))
        #expect(window.payments.map(\.request) == [middle])
        #expect(try history.list(HistoryQuery(status: "finished")).payments.map(\.request) == [late, early])
    }

    @Test func aBadCursorOrLimitIsAnInvalidQuery() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        #expect(throws: DaemonStoreError(.invalidQuery, "not-a-cursor is not a cursor this history gave")) {
            try history.list(HistoryQuery(cursor: "not-a-cursor"))
        }
        let error = #expect(throws: DaemonStoreError.self) { try history.list(HistoryQuery(limit: 501)) }
        #expect(error?.code == .invalidQuery)
    }

    @Test func retentionForgetsOldEndedPaymentsButNeverOpenOnes() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let (ended, _) = try f.pair(100)
        let (open, _) = try f.pair(200)
        let (recent, _) = try f.pair(300)
        try history.record(change(ended, "finished", at: f.now, kind: "finished"))
        try history.recordRefund(refund("r-1", of: ended, f))
        try history.record(change(open, "finished", ended: false, at: f.now, kind: "finished"))
        try history.record(change(recent, "finished", at: f.later(minutes: 60), kind: "finished"))
        #expect(try history.prune(endedBefore: f.later(minutes: 30)) == 1)
        #expect(try history.payment(ended.paymentID) == nil)
        #expect(try history.payment(open.paymentID) != nil)
        #expect(try history.payment(recent.paymentID) != nil)
        let orphans = try DatabaseQueue(path: f.path).read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM history_events) + (SELECT count(*) FROM history_refunds)")
        }
        #expect(orphans == 2)
    }

    /// A daemon that crashed with a payment shown or offered left it open: once its request is past its expiry and
    /// the grace, it is ended as expired (and so retention can forget it); one still in time stays open.
    @Test func paymentsLeftOpenPastTheirExpiryAreEnded() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let (lapsed, _) = try f.pair(100)
        let (accepted, _) = try f.pair(200)
        try history.record(change(lapsed, "open", ended: false, at: f.now, kind: "offered"))
        try history.record(change(accepted, "accepted", ended: false, at: f.now, kind: "accepted"))
        #expect(try history.endLapsed(at: lapsed.expiresAt.adding(milliseconds: 1_000), grace: 5_000) == 0)
        #expect(try history.endLapsed(at: lapsed.expiresAt.adding(milliseconds: 6_000), grace: 5_000) == 1)
        let ended = try #require(try history.payment(lapsed.paymentID)).payment
        #expect(ended.status == "expired" && ended.ended)
        // An accepted one waits for its outcome, which the customer seeks again after a restart.
        #expect(try #require(try history.payment(accepted.paymentID)).payment.status == "accepted")
    }

    @Test func refundsAreKeptOnceAndComeWithThePayment() throws {
        let f = try WalletFixture()
        let history = PaymentHistory(store: try DaemonStore(path: f.path))
        let (request, _) = try f.pair(1_000)
        try history.record(change(request, "finished", at: f.now, kind: "finished"))
        let first = refund("r-1", of: request, f)
        #expect(try history.recordRefund(first))
        #expect(try !history.recordRefund(first))
        try history.recordRefund(HistoryRefund(
            refundID: "r-1", merchantID: request.merchantID, paymentID: request.paymentID, amountMinorUnits: 999,
            currency: "EUR", refundedMinorUnits: 999, reason: "again", receipt: [9], at: f.later(minutes: 9)))
        let kept = try #require(try history.payment(request.paymentID))
        #expect(kept.refunds == [first])
        #expect(kept.payment.updatedAt == first.at)
        #expect(kept.payment.refundedMinorUnits == first.amountMinorUnits)
        #expect(try history.list(HistoryQuery()).payments.map(\.refundedMinorUnits) == [first.amountMinorUnits])
    }

    @Test func theUpgradeFromThePreviousSchemaKeepsTheOfflineData() throws {
        let f = try WalletFixture()
        let voucher = try f.voucher(5_000)
        let (request, acceptance) = try f.pair(700)
        do {
            let store = try DaemonStore(path: f.path)
            try VoucherWallet(store: store, deviceKey: f.deviceKey, trusting: TrustedLedgerKeys([f.ledgerKey])).add(voucher)
            try AcceptedPaymentStore(store: store).keep(request, acceptance, at: f.now)
        }
        // Back to the file as the schema before the history left it.
        try DatabaseQueue(path: f.path).write { db in
            try db.execute(sql: """
                DROP TABLE history_events; DROP TABLE history_refunds; DROP TABLE history_payments;
                DROP TABLE history_refund_cursor;
                DELETE FROM grdb_migrations WHERE identifier = '6 payment history';
                """)
        }
        let store = try DaemonStore(path: f.path)
        #expect(try AcceptedPaymentStore(store: store).entries().map(\.request) == [request])
        let vouchers = try DatabaseQueue(path: f.path).read { db in try Data.fetchAll(db, sql: "SELECT encoded FROM vouchers") }
        #expect(vouchers == [Data(voucher.encoded)])
        let history = PaymentHistory(store: store)
        try history.record(change(request, "open", at: f.now, kind: "receivedPayment"))
        #expect(try history.list(HistoryQuery()).payments.map(\.request) == [request])
    }

    private func change(
        _ request: PaymentRequest, _ status: String, ended: Bool? = nil, at: Timestamp, kind: String, total: UInt64? = nil,
        receipt: Receipt? = nil
    ) -> HistoryChange {
        HistoryChange(
            paymentID: request.paymentID, request: request, status: status,
            ended: ended ?? !["open", "accepted"].contains(status), totalMinorUnits: total, counterpart: "Café",
            receipt: receipt, event: HistoryEvent(kind: kind, at: at, details: #"{"kind":"\#(kind)"}"#))
    }

    private func receipt(_ request: PaymentRequest, _ status: Receipt.Status, _ f: WalletFixture) -> Receipt {
        let settled = status == .settled
        return try! Receipt(
            paymentID: request.paymentID, status: status, transactionID: settled ? "t_1" : nil, amount: request.amount,
            tipMinorUnits: 50, issuedAt: f.now, merchantID: request.merchantID, payerKey: f.deviceKey,
            ledgerKeyID: settled ? TrustedLedgerKeys.keyID(of: f.ledgerKey) : nil,
            merchantSignature: settled ? nil : .unsigned, ledgerSignature: settled ? .unsigned : nil)
    }

    private func refund(_ id: String, of request: PaymentRequest, _ f: WalletFixture) -> HistoryRefund {
        HistoryRefund(
            refundID: id, merchantID: request.merchantID, paymentID: request.paymentID, amountMinorUnits: 300,
            currency: "EUR", refundedMinorUnits: 300, reason: "returned", receipt: [1, 2, 3], at: f.later(minutes: 1))
    }
}
