import BlepayLedger
import BlepayPayments
import BlepayProtocol

/// Why a ledger call did not give its resource.
public enum LedgerClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The ledger answered with a refusal (4xx): its status and error body.
    case refused(status: Int, ErrorBody.Detail)
    /// The ledger could not be reached, or kept failing (5xx), through every retry. The request may have been
    /// carried out if it was ever sent; retrying with the same idempotency key is safe.
    case unavailable(String)
    /// The caller gave the call up (a daemon stopping): it says nothing of the ledger. As with `unavailable`, the
    /// request may have been carried out; retrying with the same idempotency key is safe.
    case cancelled(String)
    /// The ledger's answer is not what the API documents.
    case invalidResponse(String)
    /// No TLS connection the configuration trusts: a certificate from another CA, for another name, or whose key
    /// is not the pinned one, or no TLS at all. Nothing of the request was sent. Not retried: it is a
    /// configuration to fix, or someone in the middle.
    case tlsFailed(String)
    /// The request would carry a card, a token or a secret in clear to another host; it was not sent.
    case insecureTransport(String)

    /// A stable code.
    public var code: String {
        switch self {
        case .refused(_, let detail): detail.code
        case .unavailable: "ledger.unavailable"
        case .cancelled: "ledger.cancelled"
        case .invalidResponse: "ledger.invalid-response"
        case .tlsFailed: "ledger.tls-failed"
        case .insecureTransport: "ledger.insecure-transport"
        }
    }

    /// The payment error the daemons report for it.
    public var paymentError: PaymentError {
        switch self {
        case .refused(let status, let detail):
            if let name = detail.paymentError, let code = PaymentErrorCode.allCases.first(where: { $0.name == name }) {
                return PaymentError(code, detail.message)
            }
            // A request signed too far from the ledger's clock is this device's clock, not its credentials.
            if detail.code == "auth.stale-timestamp" { return PaymentError(.clockSkew, detail.message) }
            // Invalid input names its fields and their stable codes; a card's is the instrument, not a ledger fault
            // to retry.
            if let fields = detail.fields, !fields.isEmpty {
                let text = fields.map { "\($0.path) \($0.code): \($0.message)" }.joined(separator: "; ")
                return PaymentError(fields.allSatisfy { $0.path.hasPrefix("card.") } ? .invalidInstrument : .ledgerError, text)
            }
            let code: PaymentErrorCode = switch status {
            case 401, 403: .invalidCredentials
            case 404: .notFound
            default: .ledgerError
            }
            return PaymentError(code, detail.message)
        case .unavailable(let reason): return PaymentError(.ledgerOffline, reason)
        case .cancelled(let reason): return PaymentError(.outcomeUnknown, reason)
        case .invalidResponse(let reason): return PaymentError(.ledgerError, reason)
        // The ledger is out of reach as far as payments go, until the configuration or the network is put right.
        case .tlsFailed, .insecureTransport: return PaymentError(.ledgerOffline, description)
        }
    }

    public var description: String {
        switch self {
        case .refused(let status, let detail): "\(detail.code) (\(status)): \(detail.message)"
        case .unavailable(let reason): "ledger.unavailable: \(reason)"
        case .cancelled(let reason): "ledger.cancelled: \(reason)"
        case .invalidResponse(let reason): "ledger.invalid-response: \(reason)"
        case .tlsFailed(let reason): "ledger.tls-failed: \(reason)"
        case .insecureTransport(let reason): "ledger.insecure-transport: \(reason)"
        }
    }

    /// The caller gave the call up: nothing to report of the ledger, nor to log.
    public var isCancelled: Bool {
        if case .cancelled = self { true } else { false }
    }
}
