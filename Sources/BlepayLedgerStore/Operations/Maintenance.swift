import BlepayLedger
import BlepayProtocol
import Foundation

/// What time does to the books (expiry), what is kept of requests (idempotency records, nonces), and the audit.
extension LedgerOperations {
    /// Idempotency records outlive the longest offline window, so a queued retry still finds its answer.
    public static let idempotencyRetentionMilliseconds: UInt64 = 31 * 24 * 3600 * 1000

    public struct Expired: Sendable, Hashable {
        public var payments: [String] = []
        public var holds = 0
        public var preAuthorizations = 0
    }

    /// Fails requests nobody accepted in time, releases holds past their time and the escrow of pre-authorizations
    /// past their release (expiry plus grace, voided or not), seals credentials kept in clear by an older ledger, and
    /// forgets nonces and idempotency records that can no longer matter. At most `limit` of each per call.
    public func expire(_ tx: any SQLTransaction, at now: Timestamp, limit: Int = 500) throws -> Expired {
        var expired = Expired()
        for row in try tx.rows(
            """
            SELECT merchant, id FROM payments WHERE status = 'authorization_required' AND expires_at <= ?
            ORDER BY expires_at LIMIT ?
            """, [now.sqlValue, .integer(Int64(limit))])
        {
            let id = try Self.paymentID(try row.text(1))
            guard var stored = try load(tx, merchant: try row.text(0), id), stored.payment.expire(at: now) else { continue }
            try update(tx, stored, at: now)
            expired.payments.append(id.description)
        }
        let holds = try tx.rows(
            "SELECT id, debit, credit FROM holds WHERE state = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?",
            [now.sqlValue, .integer(Int64(limit))])
        for row in holds {
            var journal = try Books.load(tx, books: [AccountID(try row.text(1))], credited: [AccountID(try row.text(2))],
                holds: [try row.text(0)])
            expired.holds += journal.expireHolds(at: now).count
            try Books.save(tx, journal, at: now)
        }
        for row in try tx.rows(
            "SELECT id FROM pre_authorizations WHERE released_at IS NULL AND release_at <= ? ORDER BY release_at LIMIT ?",
            [now.sqlValue, .integer(Int64(limit))])
        {
            guard var (preAuthorization, _) = try loadPreAuthorization(tx, try row.text(0)) else { continue }
            var journal = try Books.load(tx, books: [preAuthorization.escrow], credited: [preAuthorization.customer])
            guard try preAuthorization.release(at: now, journal: &journal) else { continue }
            try Books.save(tx, journal, at: now)
            try save(tx, preAuthorization)
            expired.preAuthorizations += 1
        }
        try sealKeptCredentials(tx, limit: limit)
        let nonceWindow = UInt64(2 * RequestAuthentication.window * 1000)
        try tx.run("DELETE FROM nonces WHERE seen_at < ?", [.integer(Int64(now.millisecondsSince1970) - Int64(nonceWindow))])
        try tx.run("DELETE FROM idempotency_keys WHERE created_at < ?",
            [.integer(Int64(now.millisecondsSince1970) - Int64(Self.idempotencyRetentionMilliseconds))])
        return expired
    }

    /// When `expire` next has something to do: the earliest expiry of an open payment or a pending hold, release of
    /// a pre-authorization, or time to forget nonces (`slack` after the oldest may go, so one sweep forgets a batch)
    /// and idempotency records; `now` while credentials wait to be sealed; nil when nothing is kept that time ends.
    /// Each part is one index's first entry, so the sweeper can ask often and write only when something is due.
    public func nextExpiry(_ tx: any SQLTransaction, at now: Timestamp, slack: UInt64 = 60_000) throws -> Timestamp? {
        guard let row = try tx.row(
            """
            SELECT (SELECT MIN(expires_at) FROM payments WHERE status = 'authorization_required'),
                (SELECT MIN(expires_at) FROM holds WHERE state = 'pending'),
                (SELECT MIN(release_at) FROM pre_authorizations WHERE released_at IS NULL),
                (SELECT MIN(seen_at) FROM nonces), (SELECT MIN(created_at) FROM idempotency_keys),
                (SELECT COUNT(*) FROM (SELECT 1 FROM devices WHERE secret_sealed = 0 LIMIT 1) d)
                    + (SELECT COUNT(*) FROM (SELECT 1 FROM idempotency_keys WHERE sealed = -1 LIMIT 1) k)
            """, [])
        else { return nil }
        if try row.integer(5) > 0 { return now }
        let nonceLifetime = 2 * UInt64(RequestAuthentication.window) * 1000 + slack
        let lifetimes: [UInt64] = [0, 0, 0, nonceLifetime, Self.idempotencyRetentionMilliseconds + slack]
        let deadlines = try lifetimes.enumerated().compactMap { column, lifetime throws -> UInt64? in
            guard row.values[column] != .null else { return nil }
            return UInt64(clamping: try row.integer(column)) + lifetime
        }
        return deadlines.min().map(Timestamp.init(millisecondsSince1970:))
    }

    public func idempotencyRecord(_ tx: any SQLTransaction, principal: String, key: String) throws -> Pending<IdempotencyRecord?> {
        try tx.send("SELECT parameters_hash, status, response, sealed FROM idempotency_keys WHERE principal = ? AND key = ?",
            [.text(principal), .text(key)]
        ).map { [secretSeal] result in
            try result.rows.first.map { row in
                let response = try row.integer(3) == 1
                    ? secretSeal.open(row.blob(2), place: Self.place(principal: principal, key: key)) : row.blob(2)
                return IdempotencyRecord(key: key, parametersHash: try row.text(0), status: Int(try row.integer(1)), response: response)
            }
        }
    }

    /// Keeps a request's record; `sealed` when its response carries a credential a replay must hand back.
    public func store(_ tx: any SQLTransaction, _ record: IdempotencyRecord, principal: String, sealed: Bool = false,
        at now: Timestamp) throws
    {
        let response = try sealed
            ? secretSeal.seal(record.response, place: Self.place(principal: principal, key: record.key)) : record.response
        try tx.send(
            """
            INSERT INTO idempotency_keys (principal, key, parameters_hash, status, response, sealed, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(principal), .text(record.key), .text(record.parametersHash), .integer(Int64(record.status)),
             .blob(response), .integer(sealed ? 1 : 0), now.sqlValue])
    }

    /// Seals what a ledger kept in clear before it sealed credentials (`Schema`, migration 7): device secrets, the
    /// records of enrollments (which carry a secret), and the operator's records, whose answers may carry an
    /// enrollment token, which is withheld as a replay now answers. At most `limit` of each per call.
    func sealKeptCredentials(_ tx: any SQLTransaction, limit: Int) throws {
        for row in try tx.rows("SELECT id, secret FROM devices WHERE secret_sealed = 0 LIMIT ?", [.integer(Int64(limit))]) {
            let id = try row.text(0)
            try tx.run("UPDATE devices SET secret = ?, secret_sealed = 1 WHERE id = ?",
                [.blob(try secretSeal.seal(try row.blob(1), place: Self.place(device: id))), .text(id)])
        }
        for row in try tx.rows("SELECT principal, key, response FROM idempotency_keys WHERE sealed = -1 LIMIT ?",
            [.integer(Int64(limit))])
        {
            let (principal, key, response) = (try row.text(0), try row.text(1), try row.blob(2))
            if principal.hasPrefix("enrollment:") {
                try tx.run("UPDATE idempotency_keys SET response = ?, sealed = 1 WHERE principal = ? AND key = ?",
                    [.blob(try secretSeal.seal(response, place: Self.place(principal: principal, key: key))), .text(principal), .text(key)])
            } else {
                var kept = response
                if var object = (try? JSONSerialization.jsonObject(with: Data(response))) as? [String: Any],
                    object.removeValue(forKey: "enrollmentToken") != nil
                {
                    object["enrollmentTokenWithheld"] = true
                    kept = Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
                }
                try tx.run("UPDATE idempotency_keys SET response = ?, sealed = 0 WHERE principal = ? AND key = ?",
                    [.blob(kept), .text(principal), .text(key)])
            }
        }
    }

    /// Where an idempotency record's sealed response is kept.
    static func place(principal: String, key: String) -> String { "idempotency:\(principal):\(key)" }

    /// Everything wrong with the books: the journal's own checks (every transfer balanced, balances equal to the
    /// transfers and holds, none below zero), every payment and pre-authorization against the postings its
    /// status implies, one payer per payment across the online and offline paths, a proof for every double spend
    /// refused, and every refund with its transfer, no payment's refunds past what it paid. Empty when sound.
    public func audit(_ tx: any SQLTransaction) throws -> [String] {
        let journal = try Books.loadAll(tx)
        var problems = journal.audit()
        for row in try tx.rows("SELECT merchant, id FROM payments ORDER BY id, merchant", []) {
            guard let stored = try load(tx, merchant: try row.text(0), try Self.paymentID(try row.text(1)), lock: false) else { continue }
            problems += Self.audit(stored.payment, merchant: Self.merchantBook(stored.merchant), journal: journal)
        }
        for row in try tx.rows("SELECT id FROM pre_authorizations ORDER BY id", []) {
            guard let (preAuthorization, _) = try loadPreAuthorization(tx, try row.text(0), lock: false) else { continue }
            problems += Self.audit(preAuthorization, journal: journal)
        }
        return problems + (try auditPayers(tx)) + (try auditDoubleSpends(tx)) + (try auditRefunds(tx, journal: journal))
    }

    static func audit(_ payment: LedgerPayment, merchant: AccountID, journal: Journal) -> [String] {
        let name = "payment \(payment.request.paymentID) of merchant \(payment.request.merchantID)"
        let transfer = journal.transfers[payment.transferID]
        let hold = journal.holds[payment.holdID]
        switch payment.status {
        case .settled, .executed:
            guard let acceptance = payment.acceptance else { return ["\(name) is \(payment.status.rawValue) without an acceptance"] }
            var problems: [String] = []
            if transfer?.amount != acceptance.total.minorUnits || transfer?.credit != merchant
                || transfer?.debit != instrumentBook(acceptance.instrumentID)
            {
                problems.append("\(name) is \(payment.status.rawValue) but its transfer is \(transfer.map { "\($0)" } ?? "missing")")
            }
            if hold?.state != .posted { problems.append("\(name) is \(payment.status.rawValue) but its hold is not posted") }
            return problems
        case .authorized:
            return hold?.state == .pending && transfer == nil ? [] : ["\(name) is authorized without exactly a pending hold"]
        case .authorizationRequired, .authorizing, .cancelled, .failed:
            var problems: [String] = []
            if transfer != nil { problems.append("\(name) is \(payment.status.rawValue) but money moved") }
            if hold?.state == .pending || hold?.state == .posted {
                problems.append("\(name) is \(payment.status.rawValue) but its hold is \(hold!.state.rawValue)")
            }
            return problems
        }
    }

    static func audit(_ preAuthorization: PreAuthorization, journal: Journal) -> [String] {
        let voucher = preAuthorization.voucher
        let name = "pre-authorization \(voucher.voucherID)"
        var problems: [String] = []
        let reserve = journal.transfers["reserve:\(voucher.voucherID)"]
        if reserve?.amount != voucher.limit.minorUnits || reserve?.credit != preAuthorization.escrow {
            problems.append("\(name) reserved \(reserve.map { "\($0.amount)" } ?? "nothing"), not its limit")
        }
        for (payment, use) in preAuthorization.uses where journal.transfers[use.transferID]?.amount != use.total {
            problems.append("\(name): offline payment \(payment.id) of merchant \(payment.merchant) settled without its transfer")
        }
        let released = journal.transfers[preAuthorization.releaseID]?.amount ?? 0
        let expectedRelease = preAuthorization.releasedAt == nil ? 0 : preAuthorization.rest
        if released != expectedRelease {
            problems.append("\(name) is \(preAuthorization.releasedAt == nil ? "not " : "")released but \(released) went back")
        }
        // Before its release time a merchant may still bring a payment accepted offline, which the escrow must pay.
        if let releasedAt = preAuthorization.releasedAt, releasedAt < preAuthorization.releaseAt {
            problems.append("\(name) was released at \(releasedAt), while settlements could arrive until \(preAuthorization.releaseAt)")
        }
        let escrow = journal.balance(of: preAuthorization.escrow, in: voucher.limit.currency.code).posted
        if escrow != Int64(voucher.limit.minorUnits) - Int64(preAuthorization.spent) - Int64(released) {
            problems.append("\(name): escrow holds \(escrow), not its limit less what was settled and released")
        }
        return problems
    }
}
