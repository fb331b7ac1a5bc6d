import BlepayLedger
import BlepayLedgerStore

/// The operator's reading of payments from the command line (`blepay-ledger export`, `payments`, `payment`): the
/// same operations as `GET /v1/payments` and `GET /v1/payments/{id}` for the operator, run on the ledger's database
/// directly, like the audit. Each page is its own read, so an export holds one page at a time.
extension LedgerServer {
    public func payments(_ query: PaymentQuery) async throws -> PaymentPage {
        let operations = api.operations
        return try await storage.read { tx in try operations.listPayments(tx, query, for: .admin) }
    }

    /// One payment as the admin API would answer it (JSON); `merchant` names whose, when several have the id.
    public func paymentJSON(_ id: String, merchant: String?) async throws -> String {
        let operations = api.operations
        let payment = try await storage.read { tx in try operations.payment(tx, id: id, merchant: merchant, for: .admin) }
        return String(decoding: try LedgerAPI.encode(payment), as: UTF8.self)
    }
}
