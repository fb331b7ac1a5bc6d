import BlepayControl
import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Foundation
import GRDB
import LedgerTestSupport
import Testing
@testable import BlepayDaemon

/// What the daemons write to their history for each event, what they log, and what retention forgets.
@Suite struct HistoryRecorderTests {
    let request = ControlContractTests.request
    let settled = ControlContractTests.receipt
    let clock = MovingClock()

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-recorder-\(UUID().uuidString)")
    var path: String { directory.appendingPathComponent(DaemonStore.fileName).path }

    func recorder(_ role: DaemonConfiguration.Role, logger: LogRecorder = LogRecorder()) throws -> HistoryRecorder {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try DaemonStore(path: path)
        return HistoryRecorder(history: PaymentHistory(store: store), role: role, clock: { [clock] in clock.now() }, logger: logger.logger)
    }

    @Test func anOfflinePaymentStaysOpenUntilItsVerdictBringsTheLedgersReceipt() async throws {
        let log = LogRecorder()
        let recorder = try recorder(.business, logger: log)
        let pending = try Receipt(
            paymentID: request.paymentID, status: .pendingSettlement, transactionID: nil, amount: request.amount,
            tipMinorUnits: 100, issuedAt: fixedNow, merchantID: "m_cafe", payerKey: settled.payerKey, ledgerKeyID: nil,
            merchantSignature: .unsigned, ledgerSignature: nil)
        let finished = PaymentSnapshot(request: request, peer: PeerID(7), status: .finished, receipt: pending)
        await recorder.record(.finished(request.paymentID, by: PeerID(7), pending)) { _ in finished }
        let kept = try #require(try recorder.history.payment(request.paymentID))
        #expect(kept.payment.status == "finished" && !kept.payment.ended)
        #expect(kept.payment.totalMinorUnits == 2650 && kept.payment.receipt == pending)
        #expect(kept.payment.counterpart == TrustedLedgerKeys.keyID(of: settled.payerKey).description)

        // The verdict comes after a restart: the machine no longer holds the payment.
        await recorder.record(.settled(request.paymentID, settled))
        let decided = try #require(try recorder.history.payment(request.paymentID))
        #expect(decided.payment.status == "settled" && decided.payment.ended && decided.payment.receipt == settled)
        #expect(decided.events.map(\.kind) == ["finished", "settled"])
        #expect(ControlDetails(json: decided.events[1].details).transactionID == "pay:1")
        #expect(log.lines == [
            "info: payment event amount=2550 currency=JPY event=finished payment=\(request.paymentID)",
            "info: payment event amount=2550 currency=JPY event=settled payment=\(request.paymentID)",
        ])
    }

    @Test func theCustomersCounterpartIsTheMerchantAndAnErrorLogsItsCode() async throws {
        let log = LogRecorder()
        let recorder = try recorder(.customer, logger: log)
        let shown = PaymentSnapshot(request: request, peer: PeerID(7), status: .open, receipt: nil)
        await recorder.record(.receivedPayment(PeerID(7), request)) { _ in shown }
        let failed = PaymentSnapshot(request: request, peer: PeerID(7), status: .failed(.insufficientFunds), receipt: nil)
        await recorder.record(.error(PeerID(7), request.paymentID, PaymentError(.insufficientFunds))) { _ in failed }
        let kept = try #require(try recorder.history.payment(request.paymentID))
        #expect(kept.payment.counterpart == "Café Zürich" && kept.payment.status == "failed" && kept.payment.ended)
        #expect(log.lines.last == "info: payment event code=insufficient-funds event=error payment=\(request.paymentID)")
    }

    @Test func aWriteThatFailsIsLoggedAsAnError() async throws {
        let log = LogRecorder()
        let recorder = try recorder(.customer, logger: log)
        try await DatabaseQueue(path: path).write { db in try db.execute(sql: "DROP TABLE history_events") }
        let shown = PaymentSnapshot(request: request, peer: PeerID(7), status: .open, receipt: nil)
        await recorder.record(.receivedPayment(PeerID(7), request)) { _ in shown }
        #expect(log.lines.count == 2, "\(log.lines)")
        #expect(log.lines.last?.hasPrefix("error: a payment event could not be kept in the history error=store.unavailable") == true)
        #expect(log.lines.last?.hasSuffix("event=receivedPayment payment=\(request.paymentID)") == true, "\(log.lines)")
    }

    @Test func retentionForgetsEndedPaymentsPastItsDaysButNeverOpenOnes() async throws {
        let recorder = try recorder(.customer)
        let open = PaymentSnapshot(request: request, peer: nil, status: .open, receipt: nil)
        await recorder.record(.receivedPayment(PeerID(7), request)) { _ in open }
        let other = try PaymentRequest(
            paymentID: .random(), amount: request.amount, reference: nil, merchantID: "m_cafe", merchantName: "Café",
            createdAt: fixedNow, expiresAt: request.expiresAt, businessOnline: true, signature: .unsigned)
        let ended = PaymentSnapshot(request: other, peer: nil, status: .cancelled, receipt: nil)
        await recorder.record(.cancelled(PeerID(7), other.paymentID, by: .customer)) { _ in ended }
        clock.advance(seconds: 2 * 86_400)
        HistoryRetention(recorder: recorder, days: 3).prune()
        #expect(try recorder.history.payment(other.paymentID) != nil)
        HistoryRetention(recorder: recorder, days: 1).prune()
        #expect(try recorder.history.payment(other.paymentID) == nil)
        #expect(try recorder.history.payment(request.paymentID) != nil)
    }
}
