import BlepayLedger
import BlepayProtocol

extension LedgerOperations {
    /// What an acceptance is checked against, sent together (`SQLTransaction.send`) and read in the order the checks
    /// are made, so a refusal is the one it always was.
    struct AcceptanceReads {
        let merchant: String
        let unblocked: Pending<Void>
        let payer: Pending<String?>
        let notDoubleSpender: Pending<Void>
        /// The accepting customer's instrument (type, blocked, account), if it is theirs.
        let instrument: Pending<SQLRow?>
        /// The instrument's book (locked), the merchant's, and the payment's hold.
        let journal: Pending<Journal>
    }

    func sendAcceptanceReads(_ tx: any SQLTransaction, _ acceptance: PaymentAcceptance, merchant: String) throws
        -> AcceptanceReads
    {
        AcceptanceReads(
            merchant: merchant,
            unblocked: try requireUnblocked(tx, merchant: merchant),
            payer: try payer(tx, merchant: merchant, payment: acceptance.paymentID),
            notDoubleSpender: try refuseBlocked(tx, acceptance.customerKey),
            instrument: try tx.send(
                """
                SELECT i.type, i.blocked, i.account FROM instruments i JOIN devices d ON d.account = i.account
                JOIN accounts a ON a.id = i.account
                WHERE i.id = ? AND d.signing_key = ? AND d.revoked_at IS NULL AND a.blocked_at IS NULL
                """, [.text(acceptance.instrumentID), .blob(acceptance.customerKey.bytes)]
            ).map { $0.rows.first },
            journal: try Books.send(tx, books: [Self.instrumentBook(acceptance.instrumentID)],
                credited: [Self.merchantBook(merchant)],
                holds: .ofPayment(merchant: merchant, id: acceptance.paymentID.description)))
    }
}
