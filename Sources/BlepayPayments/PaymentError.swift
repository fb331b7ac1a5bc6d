import BlepayProtocol

/// The one error integrators see for a payment: a stable code from the shared taxonomy (`PaymentErrorCode`, listed
/// in `docs/errors.md`) with an optional detail for logs. Never carries a secret.
public struct PaymentError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: PaymentErrorCode
    public let detail: String?

    public init(_ code: PaymentErrorCode, _ detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// The stable name, e.g. `insufficient-funds`.
    public var name: String { code.name }

    /// What a person should read.
    public var summary: String { code.summary }

    public var description: String { detail.map { "\(code.name): \($0)" } ?? code.name }
}
