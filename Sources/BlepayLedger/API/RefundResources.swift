/// The JSON bodies of refunds (`POST /v1/payments/{id}/refunds`, `GET /v1/refunds`): money of a settled payment
/// going back to the book that paid it, with the ledger-signed `RefundReceipt`.

public struct CreateRefund: Codable, Sendable, Hashable {
    /// Minor units in the payment's currency; absent, the rest not yet refunded.
    public let amount: Int64?
    public let reason: String?

    public init(amount: Int64?, reason: String?) {
        self.amount = amount
        self.reason = reason
    }
}

public struct RefundResource: Codable, Sendable, Hashable {
    public let id: String
    public let paymentId: String
    public let merchantId: String
    public let amount: Int64
    public let currency: String
    public let reason: String?
    /// "settled": a refund is made at once or not at all.
    public let status: String
    /// The payment's refunds so far, this one included.
    public let refunded: Int64
    public let createdAt: UInt64
    /// The ledger-signed `RefundReceipt` (base64).
    public let receipt: String

    public init(id: String, paymentId: String, merchantId: String, amount: Int64, currency: String, reason: String?,
        status: String = "settled", refunded: Int64, createdAt: UInt64, receipt: String)
    {
        self.id = id
        self.paymentId = paymentId
        self.merchantId = merchantId
        self.amount = amount
        self.currency = currency
        self.reason = reason
        self.status = status
        self.refunded = refunded
        self.createdAt = createdAt
        self.receipt = receipt
    }
}

/// `GET /v1/refunds`: the refunds after a position, and the position after the last of them (the one given when
/// there are none), to poll with next.
public struct RefundPage: Codable, Sendable, Hashable {
    public let data: [RefundResource]
    public let cursor: String

    public init(data: [RefundResource], cursor: String) {
        self.data = data
        self.cursor = cursor
    }
}
