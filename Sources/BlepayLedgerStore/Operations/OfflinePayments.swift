import BlepayLedger
import BlepayProtocol

/// An offline payment, once settled from a voucher, is a payment like an online one: its merchant and the customer
/// whose voucher paid it read it with `GET /v1/payments/{id}`, with the ledger-signed receipt the settlement answered.
extension LedgerOperations {
    struct SettledOffline {
        let stored: StoredPayment
        /// The instrument whose pre-authorization paid it.
        let instrument: String
        let receipt: Receipt
    }

    /// The payments settled offline under `id`, of `merchant` or of any merchant (a payment id is its merchant's, so
    /// there may be several). Their history is the settlement: the ledger saw them no earlier.
    func settledOffline(_ tx: any SQLTransaction, _ id: PaymentID, merchant: String? = nil) throws -> [SettledOffline] {
        try tx.rows(
            """
            SELECT u.merchant, u.request, u.acceptance, u.settled_at, p.account, u.transfer, p.instrument,
            """ + Self.refundedSum(merchant: "u.merchant", payment: "u.payment") + """
             FROM pre_authorization_uses u JOIN pre_authorizations p ON p.id = u.pre_authorization WHERE u.payment = ?
            """ + (merchant == nil ? " ORDER BY u.merchant" : " AND u.merchant = ?"),
            [.text(id.description)] + (merchant.map { [.text($0)] } ?? []))
        .map { row in
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
                stored: StoredPayment(payment: payment, merchant: try row.text(0), customer: try row.text(4),
                    refunded: try row.integer(7)),
                instrument: try row.text(6),
                receipt: try PreAuthorization.receipt(of: request, acceptance, transferID: try row.text(5), settledAt: settledAt,
                    signedBy: ledgerKey))
        }
    }
}
