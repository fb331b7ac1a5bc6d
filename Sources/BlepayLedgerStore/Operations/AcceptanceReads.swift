import BlepayLedger
import BlepayProtocol

extension LedgerOperations {
    /// What an acceptance is checked against, sent together (`SQLTransaction.send`) and read in the order the checks
    /// are made, so a refusal is the one it always was.
    struct AcceptanceReads {
        let merchant: String
        /// The merchant is not blocked (what would pay a blocked merchant is refused).
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
        // One statement for the four lookups: on PostgreSQL each statement costs the database a round of its own.
        let checks = try tx.send(
            """
            SELECT checks.unblocked, checks.payer, checks.spender, owned.type, owned.blocked, owned.account FROM (SELECT
                (SELECT 1 FROM accounts WHERE id = ? AND blocked_at IS NULL) AS unblocked,
                (SELECT payer FROM payment_payers WHERE merchant = ? AND payment = ?) AS payer,
                (SELECT 1 FROM double_spends WHERE device_key = ? LIMIT 1) AS spender) checks
            LEFT JOIN (SELECT i.type, i.blocked, i.account FROM instruments i JOIN devices d ON d.account = i.account
                JOIN accounts a ON a.id = i.account
                WHERE i.id = ? AND d.signing_key = ? AND d.revoked_at IS NULL AND a.blocked_at IS NULL LIMIT 1) owned
            ON 1 = 1
            """,
            [.text(merchant), .text(merchant), .text(acceptance.paymentID.description), .blob(acceptance.customerKey.bytes),
             .text(acceptance.instrumentID), .blob(acceptance.customerKey.bytes)]
        ).map { result throws(StorageError) -> SQLRow in
            guard let row = result.rows.first, row.values.count == 6 else { throw StorageError(.corrupt, "no acceptance checks") }
            return row
        }
        return AcceptanceReads(
            merchant: merchant,
            unblocked: checks.map { row in if row.values[0] == .null { throw APIError.accountBlocked } },
            payer: checks.map { row in try row.optionalText(1) },
            notDoubleSpender: checks.map { row in if row.values[2] != .null { throw APIError.doubleSpender } },
            instrument: checks.map { row in row.values[3] == .null ? nil : SQLRow(Array(row.values[3...])) },
            journal: try Books.send(tx, books: [Self.instrumentBook(acceptance.instrumentID)],
                credited: [Self.merchantBook(merchant)],
                holds: .ofPayment(merchant: merchant, id: acceptance.paymentID.description)))
    }
}
