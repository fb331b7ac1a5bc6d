import BlepayProtocol

/// The backend that executes payments. The payment id is the idempotency key: `execute` is asked at most once per
/// payment, and an unknown outcome is resolved with `status`, never by executing again.
public protocol PaymentLedger: Sendable {
    func execute(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> LedgerOutcome
    /// `unknown` when the ledger still cannot say (or cannot be reached). Payment ids are each merchant's own: a
    /// customer names the merchant of the request; a business's own is implied.
    func status(of paymentID: PaymentID, merchant: String?) async -> LedgerOutcome
    /// Withdraws a request the business cancelled or let expire.
    func cancel(_ paymentID: PaymentID) async
}
