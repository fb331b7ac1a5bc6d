/// The payment error taxonomy, shared by the wire (`Error` and failed `PaymentResult` messages carry the numeric
/// value), the payment state machines and the ledger. Numeric values and names are stable: never reuse or renumber.
/// Grouped by hundreds: 1xx the customer's or business's decision, 2xx the ledger's verdict, 3xx connectivity,
/// 4xx protocol, 9xx anything else.
public enum PaymentErrorCode: UInt16, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case userCancelled = 100
    case expired = 101
    case notFound = 102
    case alreadyPaid = 103
    case amountMismatch = 104
    case rejected = 200
    case insufficientFunds = 201
    case limitExceeded = 202
    case invalidInstrument = 203
    case invalidCredentials = 204
    case blocked = 205
    case preAuthorizationInvalid = 206
    case refundExceedsPayment = 207
    case paymentNotSettled = 208
    case connectionFailed = 300
    case ledgerOffline = 301
    case ledgerError = 302
    case outcomeUnknown = 303
    case protocolViolation = 400
    case versionMismatch = 401
    case securityFailure = 402
    case clockSkew = 403
    case unexpected = 900

    /// The stable name, e.g. `insufficient-funds`.
    public var name: String {
        switch self {
        case .userCancelled: "user-cancelled"
        case .expired: "expired"
        case .notFound: "not-found"
        case .alreadyPaid: "already-paid"
        case .amountMismatch: "amount-mismatch"
        case .rejected: "rejected"
        case .insufficientFunds: "insufficient-funds"
        case .limitExceeded: "limit-exceeded"
        case .invalidInstrument: "invalid-instrument"
        case .invalidCredentials: "invalid-credentials"
        case .blocked: "blocked"
        case .preAuthorizationInvalid: "pre-authorization-invalid"
        case .refundExceedsPayment: "refund-exceeds-payment"
        case .paymentNotSettled: "payment-not-settled"
        case .connectionFailed: "connection-failed"
        case .ledgerOffline: "ledger-offline"
        case .ledgerError: "ledger-error"
        case .outcomeUnknown: "outcome-unknown"
        case .protocolViolation: "protocol-violation"
        case .versionMismatch: "version-mismatch"
        case .securityFailure: "security-failure"
        case .clockSkew: "clock-skew"
        case .unexpected: "unexpected"
        }
    }

    /// What a person should read.
    public var summary: String {
        switch self {
        case .userCancelled: "The payment was cancelled."
        case .expired: "The payment request expired before it was paid."
        case .notFound: "No such payment."
        case .alreadyPaid: "The payment was already paid."
        case .amountMismatch: "The amount, tip or currency does not match the request."
        case .rejected: "The payment was declined."
        case .insufficientFunds: "The instrument has insufficient funds."
        case .limitExceeded: "A spending or offline limit would be exceeded."
        case .invalidInstrument: "The payment instrument is not valid for this payment."
        case .invalidCredentials: "A key, token, certificate or signature was not accepted."
        case .blocked: "The account or instrument is blocked."
        case .preAuthorizationInvalid: "The pre-authorization is expired, voided or exhausted."
        case .refundExceedsPayment: "The refund would take the payment's refunds past what it paid."
        case .paymentNotSettled: "Only a settled payment can be refunded."
        case .connectionFailed: "The Bluetooth connection failed."
        case .ledgerOffline: "The ledger cannot be reached; nothing was charged."
        case .ledgerError: "The ledger failed; nothing was charged."
        case .outcomeUnknown: "The ledger did not answer in time; the outcome is being looked up."
        case .protocolViolation: "The other device broke the blepay protocol."
        case .versionMismatch: "The other device speaks no common blepay protocol version."
        case .securityFailure: "The secure session failed; the other device could not be trusted."
        case .clockSkew: "This device's clock and the other side's differ by more than the protocol allows."
        case .unexpected: "Something unexpected went wrong."
        }
    }

    public var description: String { name }
}
