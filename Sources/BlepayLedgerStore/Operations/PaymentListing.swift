import BlepayLedger
import BlepayProtocol

/// What `GET /v1/payments` (and the operator's `export` and `payments` commands) ask for: the payments of a merchant
/// or of a paying account, in a time range (milliseconds since 1970, `from` inclusive, `to` exclusive), of one
/// status, a page at a time after a cursor. The merchant and account filters are the operator's: a device lists its
/// own account's payments.
public struct PaymentQuery: Sendable, Hashable {
    public static let maximumLimit = 200

    public var merchant: String?
    public var account: String?
    public var from: UInt64?
    public var to: UInt64?
    public var status: LedgerPayment.Status?
    public var limit: Int
    public var cursor: String?

    public init(merchant: String? = nil, account: String? = nil, from: UInt64? = nil, to: UInt64? = nil,
        status: LedgerPayment.Status? = nil, limit: Int = 50, cursor: String? = nil)
    {
        self.merchant = merchant
        self.account = account
        self.from = from
        self.to = to
        self.status = status
        self.limit = limit
        self.cursor = cursor
    }

    /// The query string's parameters, each of its type; the bounds are checked by the listing.
    public init(queries: [String: String]) throws(APIError) {
        func time(_ name: String) throws(APIError) -> UInt64? {
            try queries[name].map { text throws(APIError) in
                guard let time = UInt64(text), time <= UInt64(Int64.max) else {
                    throw APIError.invalid(name, "wrong-type", "\(name) is milliseconds since 1970")
                }
                return time
            }
        }
        let limit = try queries["limit"].map { text throws(APIError) in
            guard let limit = Int(text) else { throw APIError.invalid("limit", "wrong-type", "limit is an integer") }
            return limit
        }
        let status = try queries["status"].map { text throws(APIError) in
            guard let status = LedgerPayment.Status(rawValue: text) else {
                throw APIError.invalid("status", "invalid-value",
                    "status is one of " + LedgerPayment.Status.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return status
        }
        self.init(merchant: queries["merchant"], account: queries["account"], from: try time("from"), to: try time("to"),
            status: status, limit: limit ?? 50, cursor: queries["cursor"])
    }
}

/// Listing payments, newest first. An online payment's time is its creation, an offline one's its settlement (the
/// ledger saw it no earlier); a payment is listed once, as `payment(_:id:merchant:for:)` resolves it, so one settled
/// offline shows as its offline resource even if the business also created it online. Pages are cut by keyset on
/// (time, merchant, id), not by offset, so a payment made while a client pages through appears on no later page and
/// moves no other one.
extension LedgerOperations {
    public func listPayments(_ tx: any SQLTransaction, _ query: PaymentQuery, for principal: Principal) throws -> PaymentPage {
        guard (1...PaymentQuery.maximumLimit).contains(query.limit) else {
            throw APIError.invalid("limit", "out-of-range", "limit is from 1 to \(PaymentQuery.maximumLimit)")
        }
        var (merchant, account) = (query.merchant, query.account)
        switch principal {
        case .admin:
            guard merchant != nil || account != nil else {
                throw APIError.invalid("merchant", "missing", "the operator names a merchant or an account")
            }
        case .device(let device):
            if let field = merchant != nil ? "merchant" : account != nil ? "account" : nil {
                throw APIError.invalid(field, "unexpected", "a device lists its own account's payments")
            }
            if device.accountKind == .merchant { merchant = device.account } else { account = device.account }
        }
        let after = try query.cursor.map { text throws(APIError) in try PaymentCursor(text) }

        /// The filters on one side's columns.
        func filter(time: String, merchant merchantColumn: String, id: String, payer: String) -> (String, [SQLValue]) {
            var clauses: [(String, [SQLValue])] = []
            if let merchant { clauses.append(("\(merchantColumn) = ?", [.text(merchant)])) }
            if let account { clauses.append(("\(payer) = ?", [.text(account)])) }
            if let from = query.from { clauses.append(("\(time) >= ?", [.integer(Int64(from))])) }
            if let to = query.to { clauses.append(("\(time) < ?", [.integer(Int64(to))])) }
            if let after {
                clauses.append(("(\(time), \(merchantColumn), \(id)) < (?, ?, ?)",
                    [.integer(after.time), .text(after.merchant), .text(after.id)]))
            }
            return (clauses.map(\.0).joined(separator: " AND "), clauses.flatMap(\.1))
        }
        let online = filter(time: "p.created_at", merchant: "p.merchant", id: "p.id", payer: "p.customer")
        var sql = """
            SELECT p.created_at, p.merchant, p.id FROM payments p WHERE \(online.0) AND NOT EXISTS (
                SELECT 1 FROM pre_authorization_uses s WHERE s.merchant = p.merchant AND s.payment = p.id)
            """
        var binds = online.1
        if let status = query.status {
            sql += " AND p.status = ?"
            binds.append(.text(status.rawValue))
        }
        // Offline payments are settled once they are at the ledger.
        if query.status == nil || query.status == .settled {
            let offline = filter(time: "u.settled_at", merchant: "u.merchant", id: "u.payment", payer: "a.account")
            sql += """
                 UNION ALL SELECT u.settled_at, u.merchant, u.payment FROM pre_authorization_uses u
                JOIN pre_authorizations a ON a.id = u.pre_authorization WHERE \(offline.0)
                """
            binds += offline.1
        }
        let rows = try tx.rows(sql + " ORDER BY 1 DESC, 2 DESC, 3 DESC LIMIT ?", binds + [.integer(Int64(query.limit + 1))])
        let page = rows.prefix(query.limit)
        let payments = try page.map { row in try payment(tx, id: try row.text(2), merchant: try row.text(1), for: .admin) }
        let next = try page.last.flatMap { row in
            rows.count > query.limit ? PaymentCursor(time: try row.integer(0), merchant: try row.text(1), id: try row.text(2)) : nil
        }
        return PaymentPage(data: payments, nextCursor: next?.text)
    }
}

/// Where a page of payments ended: its last payment's time, merchant and id. Clients get it as opaque hex, so that
/// its form may change.
struct PaymentCursor {
    let time: Int64
    let merchant: String
    let id: String

    init(time: Int64, merchant: String, id: String) {
        self.time = time
        self.merchant = merchant
        self.id = id
    }

    init(_ text: String) throws(APIError) {
        let parts = Hex.decode(text, limit: 256).map { String(decoding: $0, as: UTF8.self).split(separator: ":") } ?? []
        guard parts.count == 3, let time = Int64(parts[0]), time >= 0, Hex.decode(String(parts[2]), limit: 16)?.count == 16
        else { throw APIError.invalid("cursor", "invalid-cursor", "cursor is not one a page of payments gave") }
        self.init(time: time, merchant: String(parts[1]), id: String(parts[2]))
    }

    var text: String { Array("\(time):\(merchant):\(id)".utf8).hex }
}
