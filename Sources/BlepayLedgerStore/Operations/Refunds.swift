import BlepayLedger
import BlepayProtocol
import Foundation

/// Refunds: the merchant of a settled payment, online or offline, gives money of it back to the book that paid it
/// (the instrument online, the pre-authorization's instrument offline), at most what it paid in all. The payment is
/// locked before its refunds are counted, so that concurrent refunds of one payment take turns and each sees the
/// ones before it.
extension LedgerOperations {
    /// A settled payment as a refund needs it.
    struct Refundable {
        let merchant: String
        let paymentID: PaymentID
        /// The account that paid, its book and its device key.
        let customer: String
        let payerBook: AccountID
        let payerKey: Key32
        /// Amount and tip.
        let paid: Money
        /// Its refunds so far.
        let refunded: Int64
    }

    /// Refunds `body.amount` of the payment (the rest not yet refunded without one), for its merchant's business
    /// devices or the operator naming the merchant.
    public func refund(_ tx: any SQLTransaction, payment id: String, _ body: CreateRefund, merchant: String?,
        for principal: Principal, at now: Timestamp) throws -> RefundResource
    {
        let merchant = try Self.merchant(merchant, of: principal)
        let payment = try refundable(tx, merchant: merchant, try Self.paymentID(id))
        let rest = Int64(payment.paid.minorUnits) - payment.refunded
        if body.amount == nil, rest <= 0 {
            throw APIError(LedgerError(.refundExceedsPayment, "payment \(payment.paymentID) is refunded in full"))
        }
        let amount = try Self.money(body.amount ?? rest, payment.paid.currency.code)
        guard Int64(amount.minorUnits) <= rest else {
            throw APIError(LedgerError(.refundExceedsPayment, "\(rest) of payment \(payment.paymentID) is left to refund"))
        }
        let reason = try body.reason.map { text throws(APIError) in
            try Self.name(text, field: "reason", limit: RefundReceipt.reasonLimit)
        }
        let refundID = Self.randomID("rfd_")
        let transferID = "refund:\(refundID)"
        let merchantBook = Self.merchantBook(merchant)
        var journal = try Books.load(tx, books: [merchantBook], credited: [payment.payerBook])
        do { try journal.transfer(id: transferID, from: merchantBook, to: payment.payerBook, amount: amount) } catch {
            throw APIError(error)
        }
        let receipt = try RefundReceipt(
            refundID: refundID, paymentID: payment.paymentID, merchantID: merchant, payerKey: payment.payerKey,
            amount: amount, refundedMinorUnits: UInt64(payment.refunded) + amount.minorUnits,
            paidMinorUnits: payment.paid.minorUnits, reason: reason, issuedAt: now,
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
        ).signed(by: ledgerKey)
        try Books.save(tx, journal, at: now)
        // Taken last: the row every refund updates is held only from here to the commit.
        try tx.run("UPDATE refund_sequence SET last = last + 1", [])
        guard let sequence = try tx.row("SELECT last FROM refund_sequence", []) else {
            throw StorageError(.corrupt, "refund_sequence has no row")
        }
        try tx.run(
            """
            INSERT INTO refunds (id, sequence, merchant, payment, customer, amount, currency, reason, transfer, receipt, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(refundID), .integer(try sequence.integer(0)), .text(merchant), .text(payment.paymentID.description),
             .text(payment.customer), .integer(Int64(amount.minorUnits)), .text(amount.currency.code),
             reason.map { .text($0) } ?? .null, .text(transferID), .blob(receipt.encoded), now.sqlValue])
        return Self.refundResource(receipt)
    }

    /// The refunds of a payment, oldest first, for whoever may see the payment.
    public func refunds(_ tx: any SQLTransaction, payment id: String, merchant: String?, for principal: Principal) throws
        -> [RefundResource]
    {
        let payment = try payment(tx, id: id, merchant: merchant, for: principal)
        return try tx.rows("SELECT receipt FROM refunds WHERE merchant = ? AND payment = ? ORDER BY sequence",
            [.text(payment.merchantId), .text(payment.id)]).map { row in try Self.storedRefund(try row.blob(0)) }
    }

    /// The refunds after `after` (a position a page answered) of the payments the caller is party to: its
    /// merchant's for a business device, those its account paid for a customer device, every one (or `merchant`'s)
    /// for the operator.
    public func refunds(_ tx: any SQLTransaction, after: String?, limit: Int, merchant: String?, for principal: Principal)
        throws -> RefundPage
    {
        let position = try after.map { text throws(APIError) -> Int64 in
            guard let position = Int64(text), position >= 0 else {
                throw APIError.invalid("after", "invalid-cursor", "after is a cursor a page of refunds answered")
            }
            return position
        } ?? 0
        guard (1...200).contains(limit) else { throw APIError.invalid("limit", "out-of-range", "limit is 1 to 200") }
        let (column, party): (String?, String?) = switch principal {
        case .admin: (merchant == nil ? nil : "merchant", merchant)
        case .device(let device): (device.accountKind == .merchant ? "merchant" : "customer", device.account)
        }
        let rows = try tx.rows(
            "SELECT sequence, receipt FROM refunds WHERE sequence > ?" + (column.map { " AND \($0) = ?" } ?? "")
                + " ORDER BY sequence LIMIT ?",
            [.integer(position)] + (party.map { [.text($0)] } ?? []) + [.integer(Int64(limit))])
        let last = try rows.last.map { try $0.integer(0) } ?? position
        return RefundPage(data: try rows.map { row in try Self.storedRefund(try row.blob(1)) }, cursor: String(last))
    }

    /// The merchant a merchant's route acts for: a business device's own; the operator names it.
    static func merchant(_ merchant: String?, of principal: Principal) throws(APIError) -> String {
        switch principal {
        case .admin:
            guard let merchant else { throw APIError.invalid("merchant", "missing", "the operator names the merchant") }
            return merchant
        case .device(let device):
            guard device.accountKind == .merchant else { throw APIError.forbidden("this route is for business devices") }
            return device.account
        }
    }

    /// The settled payment of `merchant` and `id`, offline or online (offline first, as `payment` reads it), locked
    /// first when `lock`, so that the refunds counted are every one committed before.
    func refundable(_ tx: any SQLTransaction, merchant: String, _ id: PaymentID, lock: Bool = true) throws -> Refundable {
        let binds: [SQLValue] = [.text(merchant), .text(id.description)]
        if lock {
            _ = try tx.rows("SELECT 1 FROM pre_authorization_uses WHERE merchant = ? AND payment = ?" + tx.dialect.forUpdate, binds)
            _ = try tx.rows("SELECT 1 FROM payments WHERE merchant = ? AND id = ?" + tx.dialect.forUpdate, binds)
        }
        if let offline = try settledOffline(tx, id, merchant: merchant).first, let acceptance = offline.stored.payment.acceptance,
            let customer = offline.stored.customer
        {
            return Refundable(merchant: merchant, paymentID: id, customer: customer,
                payerBook: Self.instrumentBook(offline.instrument), payerKey: acceptance.customerKey, paid: acceptance.total,
                refunded: offline.stored.refunded)
        }
        guard let stored = try load(tx, merchant: merchant, id, lock: false) else { throw APIError.notFound("payment") }
        guard stored.payment.status == .settled, let acceptance = stored.payment.acceptance, let customer = stored.customer
        else {
            throw APIError(LedgerError(.paymentNotSettled, "payment \(id) is \(stored.payment.status.rawValue)"))
        }
        return Refundable(merchant: merchant, paymentID: id, customer: customer,
            payerBook: Self.instrumentBook(acceptance.instrumentID), payerKey: acceptance.customerKey, paid: acceptance.total,
            refunded: stored.refunded)
    }

    /// The sum of the refunds of the payment a query's row names, as a column.
    static func refundedSum(merchant: String, payment: String) -> String {
        "(SELECT COALESCE(SUM(r.amount), 0) FROM refunds r WHERE r.merchant = \(merchant) AND r.payment = \(payment))"
    }

    /// Refunds that exceed what their payment paid, and refunds whose transfer is missing or moved another amount.
    func auditRefunds(_ tx: any SQLTransaction, journal: Journal) throws -> [String] {
        var problems: [String] = []
        for row in try tx.rows("SELECT id, amount, currency, transfer, merchant FROM refunds ORDER BY sequence", []) {
            let (id, amount, currency, transfer) = (try row.text(0), try row.integer(1), try row.text(2), try row.text(3))
            let moved = journal.transfers[transfer]
            let merchant = Self.merchantBook(try row.text(4))
            if moved?.amount != UInt64(clamping: amount) || moved?.currency != currency || moved?.debit != merchant {
                problems.append("refund \(id) of \(amount) \(currency) has transfer \(moved.map { "\($0)" } ?? "missing")")
            }
        }
        for row in try tx.rows("SELECT DISTINCT merchant, payment FROM refunds ORDER BY payment, merchant", []) {
            let (merchant, payment) = (try row.text(0), try row.text(1))
            let name = "payment \(payment) of merchant \(merchant)"
            do {
                let refundable = try refundable(tx, merchant: merchant, try Self.paymentID(payment), lock: false)
                if refundable.refunded > Int64(refundable.paid.minorUnits) {
                    problems.append("\(name) has \(refundable.refunded) refunded, more than the \(refundable.paid.minorUnits) it paid")
                }
            } catch let error as APIError {
                problems.append("\(name) has refunds but cannot be refunded: \(error.message)")
            }
        }
        return problems
    }

    static func storedRefund(_ bytes: [UInt8]) throws -> RefundResource {
        do { return refundResource(try RefundReceipt(encoded: bytes)) } catch {
            throw StorageError(.corrupt, "refund receipt: \(error)")
        }
    }

    static func refundResource(_ receipt: RefundReceipt) -> RefundResource {
        RefundResource(
            id: receipt.refundID, paymentId: receipt.paymentID.description, merchantId: receipt.merchantID,
            amount: Int64(receipt.amount.minorUnits), currency: receipt.amount.currency.code, reason: receipt.reason,
            refunded: Int64(receipt.refundedMinorUnits), createdAt: receipt.issuedAt.millisecondsSince1970,
            receipt: Data(receipt.encoded).base64EncodedString())
    }
}
