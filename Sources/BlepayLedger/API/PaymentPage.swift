/// `GET /v1/payments`: one page of payments, newest first, and the cursor of the next page (absent on the last).
public struct PaymentPage: Codable, Sendable, Hashable {
    public let data: [PaymentResource]
    public let nextCursor: String?

    public init(data: [PaymentResource], nextCursor: String?) {
        self.data = data
        self.nextCursor = nextCursor
    }
}
