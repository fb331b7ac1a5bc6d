import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Foundation
import Logging

/// The business's money after the payment, as the ledger keeps it: refunds of its settled payments, and a day's
/// takings. The ledger executes a refund; its ledger-signed receipt is checked against the trusted keys and kept in
/// the history before the refund is answered and signalled (`refunded`).
public struct MerchantRefunds: Sendable {
    let ledger: LedgerClient
    let trusted: TrustedLedgerKeys
    let history: PaymentHistory
    let logger: Logger
    private let made = AsyncStream<RefundReceipt>.makeStream()
    /// Each refund made, once kept; the control API signals them.
    public var events: AsyncStream<RefundReceipt> { made.stream }

    public init(ledger: LedgerClient, trusted: TrustedLedgerKeys, history: PaymentHistory, logger: Logger) {
        self.ledger = ledger
        self.trusted = trusted
        self.history = history
        self.logger = logger
    }

    /// Refunds `minorUnits` of payment `id`, in its currency (nil: all that is left), to the instrument that paid it.
    /// `requestID` names the caller's attempt: the same one again (a retry after a lost answer) is the same refund,
    /// never a second.
    public func refund(_ id: PaymentID, minorUnits: UInt64?, reason: String?, requestID: String) async throws(PaymentError)
        -> RefundReceipt
    {
        let receipt: RefundReceipt
        do {
            let resource = try await ledger.refund(
                id, CreateRefund(amount: minorUnits.map { Int64($0) }, reason: reason),
                idempotencyKey: "refund-\(id)-\(requestID)")
            receipt = try resource.verifiedReceipt(trusting: trusted)
        } catch let error as LedgerClientError {
            throw error.paymentError
        } catch {
            throw PaymentError(.securityFailure, "the ledger's refund receipt: \(error)")
        }
        do {
            try history.recordRefund(HistoryRefund(receipt))
        } catch {
            logger.error("a refund could not be kept in the history", metadata: [
                "payment": "\(id)", "refund": "\(receipt.refundID)", "error": "\(error)",
            ])
        }
        logger.info("payment refunded", metadata: [
            "payment": "\(id)", "refund": "\(receipt.refundID)", "amount": "\(receipt.amount)",
        ])
        made.continuation.yield(receipt)
        return receipt
    }

    /// The merchant's takings on `date` (YYYY-MM-DD) counted in `timeZone`, by currency.
    public func dailyReport(date: String, timeZone: String) async throws(PaymentError) -> DailyReport {
        do throws(LedgerClientError) {
            return try await ledger.dailyReport(date: date, timeZone: timeZone)
        } catch {
            throw error.paymentError
        }
    }
}

extension RefundResource {
    /// The ledger-signed receipt this refund carries, signed by a trusted ledger key and for this refund.
    func verifiedReceipt(trusting trusted: TrustedLedgerKeys) throws(ProtocolError) -> RefundReceipt {
        guard let bytes = Data(base64Encoded: receipt) else { throw ProtocolError(.invalidValue, "the receipt is not base64") }
        let receipt = try RefundReceipt(encoded: [UInt8](bytes))
        try receipt.verify(trusting: trusted)
        guard receipt.refundID == id, receipt.paymentID.description == paymentId else {
            throw ProtocolError(.invalidValue, "the receipt is for another refund")
        }
        return receipt
    }
}
