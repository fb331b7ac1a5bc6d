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
    /// The ledger's answer is not what the API documents.
    case invalidResponse(String)

    /// A stable code.
    public var code: String {
        switch self {
        case .refused(_, let detail): detail.code
        case .unavailable: "ledger.unavailable"
        case .invalidResponse: "ledger.invalid-response"
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
            let code: PaymentErrorCode = switch status {
            case 401, 403: .invalidCredentials
            case 404: .notFound
            default: .ledgerError
            }
            return PaymentError(code, detail.message)
        case .unavailable(let reason): return PaymentError(.ledgerOffline, reason)
        case .invalidResponse(let reason): return PaymentError(.ledgerError, reason)
        }
    }

    public var description: String {
        switch self {
        case .refused(let status, let detail): "\(detail.code) (\(status)): \(detail.message)"
        case .unavailable(let reason): "ledger.unavailable: \(reason)"
        case .invalidResponse(let reason): "ledger.invalid-response: \(reason)"
        }
    }
}
