import BlepayProtocol

/// One payer per payment: the online and the offline path both record who paid a merchant's payment id, in the
/// transaction that moves the money, and check the record first. The table's key refuses a second payer even if a
/// check were missed, so a request can never credit its merchant twice.
extension LedgerOperations {
    /// How a payer is recorded: the instrument of an online acceptance, or the voucher of an offline one.
    static func payer(instrument: String) -> String { "instrument:\(instrument)" }
    static func payer(voucher: String) -> String { "voucher:\(voucher)" }

    func payer(_ tx: any SQLTransaction, merchant: String, payment: PaymentID) throws -> Pending<String?> {
        try tx.send("SELECT payer FROM payment_payers WHERE merchant = ? AND payment = ?",
            [.text(merchant), .text(payment.description)]).map { result in try result.rows.first?.text(0) }
    }

    func recordPayer(_ tx: any SQLTransaction, _ payer: String, merchant: String, payment: PaymentID) throws {
        try tx.send("INSERT INTO payment_payers (merchant, payment, payer) VALUES (?, ?, ?)",
            [.text(merchant), .text(payment.description), .text(payer)])
    }

    /// Payments paid both online and offline, and paid payments whose payer is not the one recorded.
    func auditPayers(_ tx: any SQLTransaction) throws -> [String] {
        var problems: [String] = []
        for row in try tx.rows(
            """
            SELECT p.merchant, p.id FROM payments p JOIN pre_authorization_uses u ON u.merchant = p.merchant AND u.payment = p.id
            WHERE p.status IN ('executed', 'settled') ORDER BY p.id
            """, [])
        {
            problems.append("payment \(try row.text(1)) of merchant \(try row.text(0)) was paid both online and offline")
        }
        for row in try tx.rows(
            """
            SELECT merchant, id FROM payments p WHERE status IN ('executed', 'settled') AND NOT EXISTS (
                SELECT 1 FROM payment_payers r WHERE r.merchant = p.merchant AND r.payment = p.id AND r.payer = 'instrument:' || p.instrument)
            UNION ALL
            SELECT merchant, payment FROM pre_authorization_uses u WHERE NOT EXISTS (
                SELECT 1 FROM payment_payers r WHERE r.merchant = u.merchant AND r.payment = u.payment
                AND r.payer = 'voucher:' || u.pre_authorization)
            ORDER BY 2
            """, [])
        {
            problems.append("payment \(try row.text(1)) of merchant \(try row.text(0)) was paid by another payer than recorded")
        }
        return problems
    }
}
