import BlepayLedger
import BlepayProtocol

/// An offline payment, once settled from a voucher, is a payment like an online one: its merchant and the customer
/// whose voucher paid it read it with `GET /v1/payments/{id}`, with the ledger-signed receipt the settlement answered.
extension LedgerOperations {
    struct SettledOffline {
        let stored: StoredPayment
        let receipt: Receipt
    }

    /// The payment settled offline under `id`, if any. Its history is the settlement: the ledger saw it no earlier.
    func settledOffline(_ tx: any SQLTransaction, _ id: PaymentID) throws -> SettledOffline? {
        guard let row = try tx.row(
            """
            SELECT u.merchant, u.request, u.acceptance, u.settled_at, p.account FROM pre_authorization_uses u
            JOIN pre_authorizations p ON p.id = u.pre_authorization WHERE u.payment = ?
            """, [.text(id.description)])
        else { return nil }
        let settledAt = try row.timestamp(3)
        let request: PaymentRequest
        let acceptance: PaymentAcceptance
        do {
            request = try PaymentRequest(encoded: try row.blob(1))
            acceptance = try PaymentAcceptance(encoded: try row.blob(2))
        } catch let error as ProtocolError {
            throw StorageError(.corrupt, "offline payment \(id): \(error)")
        }
        let payment = LedgerPayment(request: request, acceptance: acceptance, failure: nil,
            history: [LedgerPayment.Change(status: .executed, at: settledAt), LedgerPayment.Change(status: .settled, at: settledAt)])
        return SettledOffline(
            stored: StoredPayment(payment: payment, merchant: try row.text(0), customer: try row.text(4)),
            receipt: try PreAuthorization.receipt(of: request, acceptance, settledAt: settledAt, signedBy: ledgerKey))
    }
}
