import BlepayProtocol

/// A refusal of an API request: the HTTP status, a stable code, a message, and for invalid input the fields.
/// Every error the ledger's operations raise maps to one (`init(_:)`), so the server answers each with a 4xx or
/// 503 and a body clients can act on.
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String
    public let fields: [ValidationError.Field]?
    public let paymentError: PaymentErrorCode?

    public init(status: Int, code: String, _ message: String, fields: [ValidationError.Field]? = nil,
        paymentError: PaymentErrorCode? = nil)
    {
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.paymentError = paymentError
    }

    public var description: String { "\(status) \(code): \(message)" }

    public var body: ErrorBody {
        ErrorBody(.init(code: code, message: message, fields: fields, paymentError: paymentError?.name))
    }

    public static func malformed(_ message: String) -> APIError { APIError(status: 400, code: "request.malformed", message) }
    public static func invalid(_ path: String, _ code: String, _ message: String) -> APIError {
        APIError(status: 400, code: "validation.failed", message,
            fields: [ValidationError.Field(path: path, code: code, message: message)])
    }
    public static func notFound(_ what: String) -> APIError { APIError(status: 404, code: "not-found", "no such \(what)") }
    public static func forbidden(_ message: String) -> APIError { APIError(status: 403, code: "auth.forbidden", message) }
    public static let unauthenticated = APIError(status: 401, code: "auth.unauthenticated", "credentials are missing or wrong")

    public init(_ error: ValidationError) {
        self.init(status: 400, code: "validation.failed", error.fields.map(\.message).joined(separator: "; "),
            fields: error.fields)
    }

    /// The books refused: a conflict with the payment's state is 409, every other refusal 422.
    public init(_ error: LedgerError) {
        let status = switch error.code {
        case .invalidStatus, .idConflict, .holdNotPending, .paymentNotSettled: 409
        default: 422
        }
        self.init(status: status, code: error.code.rawValue, error.detail, paymentError: error.paymentErrorCode)
    }

    public init(_ error: RequestAuthentication.Failure) {
        self.init(status: 401, code: error.code.rawValue, "the request's signature headers are missing, stale or wrong")
    }

    public init(_ error: IdempotencyRecord.KeyError) {
        let message = switch error {
        case .missing: "every POST needs an Idempotency-Key header"
        case .tooLong: "an Idempotency-Key is at most 255 characters"
        case .invalidCharacters: "an Idempotency-Key is printable ASCII without spaces"
        }
        self.init(status: 400, code: "idempotency.invalid-key", message)
    }

    public static let idempotencyConflict = APIError(
        status: 409, code: "idempotency.conflict", "this Idempotency-Key was used with other parameters")

    /// A payment id is its merchant's: the caller is party to payments of `id` at several merchants and must name one.
    public static func merchantRequired(of id: String) -> APIError {
        APIError(status: 409, code: "payment.merchant-required",
            "payment \(id) is at several merchants; name one with the merchant query parameter")
    }
}
