import BlepayProtocol

/// A refusal by the ledger's books, with a stable code and the payment error it means for a payer.
public struct LedgerError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case unknownAccount = "ledger.unknown-account"
        case insufficientFunds = "ledger.insufficient-funds"
        /// A transfer or hold id used before with other parameters.
        case idConflict = "ledger.id-conflict"
        case unknownHold = "ledger.unknown-hold"
        /// The hold was already posted, voided or expired.
        case holdNotPending = "ledger.hold-not-pending"
        case exceedsHold = "ledger.exceeds-hold"
        case invalidAmount = "ledger.invalid-amount"
        /// The transfer would take a balance past what the books can count.
        case balanceLimit = "ledger.balance-limit"
        // Payments.
        case expired = "ledger.expired"
        /// Amount or currency other than the request's.
        case amountMismatch = "ledger.amount-mismatch"
        /// An acceptance not signed by the registered device key, or bound to another request.
        case invalidSignature = "ledger.invalid-signature"
        /// The payment is not in a status that allows this (already accepted, paid, cancelled or failed).
        case invalidStatus = "ledger.invalid-status"
        /// The operator blocked the paying instrument.
        case blocked = "ledger.blocked"
        /// The device key signed a double spend: it gets no more vouchers and pays nothing online.
        case deviceBlocked = "ledger.device-blocked"
        // Refunds.
        /// The refund would take the payment's refunds past what it paid.
        case refundExceedsPayment = "ledger.refund-exceeds-payment"
        /// The payment is not settled (open, cancelled, failed), so nothing of it can go back.
        case paymentNotSettled = "ledger.payment-not-settled"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    /// The payment error a payer is told.
    public var paymentErrorCode: PaymentErrorCode {
        switch code {
        case .insufficientFunds: .insufficientFunds
        case .exceedsHold, .balanceLimit: .limitExceeded
        case .holdNotPending: .preAuthorizationInvalid
        case .unknownAccount: .invalidInstrument
        case .idConflict, .unknownHold, .invalidAmount: .rejected
        case .expired: .expired
        case .amountMismatch: .amountMismatch
        case .invalidSignature: .invalidCredentials
        case .invalidStatus: .alreadyPaid
        case .blocked, .deviceBlocked: .blocked
        case .refundExceedsPayment: .refundExceedsPayment
        case .paymentNotSettled: .paymentNotSettled
        }
    }
}
