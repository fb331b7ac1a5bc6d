import BlepayProtocol

extension Receipt {
    /// The ledger-signed receipt of a settled payment, online or offline alike: what customer and business keep, and
    /// anyone can verify offline with the ledger's public key. `transactionID` names the transfer that paid it.
    public static func settled(_ acceptance: PaymentAcceptance, transactionID: String, at settledAt: Timestamp,
        signedBy ledgerKey: SigningKey) throws(LedgerError) -> Receipt
    {
        do {
            return try Receipt(
                paymentID: acceptance.paymentID, status: .settled, transactionID: transactionID,
                amount: acceptance.amount, tipMinorUnits: acceptance.tipMinorUnits, issuedAt: settledAt,
                ledgerSignature: .unsigned
            ).signed(by: ledgerKey)
        } catch {
            throw LedgerError(.invalidStatus, error.message)
        }
    }
}
