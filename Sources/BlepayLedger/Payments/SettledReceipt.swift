import BlepayProtocol

extension Receipt {
    /// The ledger-signed receipt of a settled payment, online or offline alike (`Receipt.settled`), its failure in
    /// the ledger's terms.
    static func signed(
        _ request: PaymentRequest, _ acceptance: PaymentAcceptance, transactionID: String, at settledAt: Timestamp,
        by ledgerKey: SigningKey
    ) throws(LedgerError) -> Receipt {
        do {
            return try Receipt.settled(request, acceptance, transactionID: transactionID, at: settledAt, signedBy: ledgerKey)
        } catch {
            throw LedgerError(.invalidStatus, error.message)
        }
    }
}
