import BlepayProtocol
import Foundation
import GRDB

/// Every payment a daemon took part in, kept in its state file across restarts and upgrades: each with its events in
/// order and its refunds, listed newest first a page at a time, and forgotten once ended and older than the
/// retention. A payment id is unique per merchant only: payments are kept by (merchant, payment id), and looked up
/// by id alone as the newest with that id.
public struct PaymentHistory: Sendable {
    private let store: DaemonStore
    private static func failure(_ why: String) -> DaemonStoreError { DaemonStoreError(.unavailable, why) }
    private static let columns = """
        id, request, status, ended, total, tip, counterpart, receipt, created_at, updated_at,
        (SELECT sum(amount) FROM history_refunds r
            WHERE r.merchant_id = history_payments.merchant_id AND r.payment_id = history_payments.payment_id) AS refunded
        """

    public init(store: DaemonStore) { self.store = store }

    /// Keeps the payment as `change` leaves it and appends its event. A change without a request for a payment not
    /// kept is dropped. A settled receipt is never replaced by a pending one.
    public func record(_ change: HistoryChange) throws(DaemonStoreError) {
        // Every statement here runs for each event of every payment: each is prepared once a connection and kept
        // (preparing one costs more than running it).
        try store.write(failing: Self.failure) { db in
            let at = Int64(change.event.at.millisecondsSince1970)
            let kept = try change.request.map { request in
                try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT id, receipt FROM history_payments WHERE merchant_id = ? AND payment_id = ?"),
                    arguments: [request.merchantID, Data(request.paymentID.bytes)])
            } ?? Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT id, receipt FROM history_payments WHERE payment_id = ? ORDER BY created_at DESC, id DESC LIMIT 1"),
                arguments: [Data(change.paymentID.bytes)])
            let keptReceipt = try kept.flatMap { row -> Data? in row["receipt"] }.map { try Receipt(encoded: Array($0)) }
            let receipt = Self.newer(change.receipt, than: keptReceipt)
            let values: [(String, (any DatabaseValueConvertible)?)] = [
                ("status", change.status), ("ended", change.ended), ("total", change.totalMinorUnits.map(Int64.init)),
                ("tip", change.tipMinorUnits.map(Int64.init)), ("counterpart", change.counterpart),
                ("receipt", receipt.map { Data($0.encoded) }), ("updated_at", at),
            ]
            let payment: Int64
            if let kept {
                payment = kept["id"]
                // What this change does not know stays as kept.
                let set = values.filter { $0.1 != nil }
                try db.cachedStatement(
                    sql: "UPDATE history_payments SET \(set.map { "\($0.0) = ?" }.joined(separator: ", ")) WHERE id = ?"
                ).execute(arguments: StatementArguments(set.map(\.1) + [payment]))
            } else {
                guard let request = change.request else { return }
                try db.cachedStatement(
                    sql: """
                        INSERT INTO history_payments (merchant_id, payment_id, request, created_at, \(values.map(\.0).joined(separator: ", ")))
                        VALUES (?, ?, ?, ?, \(values.map { _ in "?" }.joined(separator: ", ")))
                        """
                ).execute(
                    arguments: StatementArguments(
                        [request.merchantID, Data(request.paymentID.bytes), Data(request.encoded), at] as [(any DatabaseValueConvertible)?]
                            + values.map(\.1)))
                payment = db.lastInsertedRowID
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO history_events (payment, sequence, kind, at, details)
                    SELECT ?, coalesce(max(sequence), 0) + 1, ?, ?, ? FROM history_events WHERE payment = ?
                    """
            ).execute(arguments: [payment, change.event.kind, at, change.event.details, payment])
        }
    }

    /// Keeps a refund of a payment (once: the same refund id again changes nothing), which counts as the payment's
    /// latest change for retention. Returns whether it was new.
    @discardableResult
    public func recordRefund(_ refund: HistoryRefund) throws(DaemonStoreError) -> Bool {
        try store.write(failing: Self.failure) { db in
            let at = Int64(refund.at.millisecondsSince1970)
            try db.execute(
                sql: """
                    INSERT INTO history_refunds
                        (refund_id, merchant_id, payment_id, amount, currency, refunded, reason, receipt, at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (refund_id) DO NOTHING
                    """,
                arguments: [
                    refund.refundID, refund.merchantID, Data(refund.paymentID.bytes), Int64(refund.amountMinorUnits),
                    refund.currency, Int64(refund.refundedMinorUnits), refund.reason, Data(refund.receipt), at,
                ])
            guard db.changesCount > 0 else { return false }
            try db.execute(
                sql: "UPDATE history_payments SET updated_at = max(updated_at, ?) WHERE merchant_id = ? AND payment_id = ?",
                arguments: [at, refund.merchantID, Data(refund.paymentID.bytes)])
            return true
        }
    }

    /// Where the ledger's list of refunds was last read up to (`GET /v1/refunds?after=`); nil before the first read.
    public func refundCursor() throws(DaemonStoreError) -> String? {
        try store.read(failing: Self.failure) { db in
            try String.fetchOne(db, sql: "SELECT cursor FROM history_refund_cursor WHERE id = 1")
        }
    }

    public func keepRefundCursor(_ cursor: String) throws(DaemonStoreError) {
        try store.write(failing: Self.failure) { db in
            try db.execute(
                sql: "INSERT INTO history_refund_cursor (id, cursor) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET cursor = excluded.cursor",
                arguments: [cursor])
        }
    }

    /// One page of payments, newest first, and the cursor of the next page (nil after the last). Payments kept
    /// after a page was read never shift the pages after it.
    public func list(_ query: HistoryQuery) throws(DaemonStoreError) -> (payments: [HistoryPayment], next: String?) {
        guard HistoryQuery.limits.contains(query.limit) else {
            throw DaemonStoreError(.invalidQuery, "a page holds \(HistoryQuery.limits) payments, not \(query.limit)")
        }
        var conditions: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        if let since = query.since {
            conditions.append("created_at >= ?")
            arguments.append(Int64(since.millisecondsSince1970))
        }
        if let until = query.until {
            conditions.append("created_at < ?")
            arguments.append(Int64(until.millisecondsSince1970))
        }
        if let status = query.status {
            conditions.append("status = ?")
            arguments.append(status)
        }
        if let cursor = query.cursor {
            let (created, id) = try Self.position(cursor)
            conditions.append("(created_at, id) < (?, ?)")
            arguments += [created, id]
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let rows = try store.read(failing: Self.failure) { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.columns) FROM history_payments \(filter) ORDER BY created_at DESC, id DESC LIMIT ?",
                arguments: StatementArguments(arguments + [query.limit + 1]))
                .map { row in (try Self.payment(row), row["created_at"] as Int64, row["id"] as Int64) }
        }
        let page = rows.prefix(query.limit)
        let next = rows.count > query.limit ? page.last.map { "\($0.1).\($0.2)" } : nil
        return (page.map(\.0), next)
    }

    /// The newest payment with this id, its events in order and its refunds oldest first; nil if none is kept.
    public func payment(_ id: PaymentID) throws(DaemonStoreError)
        -> (payment: HistoryPayment, events: [HistoryEvent], refunds: [HistoryRefund])?
    {
        try store.read(failing: Self.failure) { db in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT \(Self.columns) FROM history_payments WHERE payment_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
                arguments: [Data(id.bytes)])
            else { return nil }
            let payment = try Self.payment(row)
            let events = try Row.fetchAll(
                db, sql: "SELECT kind, at, details FROM history_events WHERE payment = ? ORDER BY sequence",
                arguments: [row["id"] as Int64]
            ).map { HistoryEvent(kind: $0["kind"], at: Timestamp(millisecondsSince1970: UInt64($0["at"] as Int64)), details: $0["details"]) }
            let refunds = try Row.fetchAll(
                db, sql: """
                    SELECT refund_id, amount, currency, refunded, reason, receipt, at FROM history_refunds
                    WHERE merchant_id = ? AND payment_id = ? ORDER BY at, refund_id
                    """,
                arguments: [payment.request.merchantID, Data(id.bytes)]
            ).map { row in
                HistoryRefund(
                    refundID: row["refund_id"], merchantID: payment.request.merchantID, paymentID: id,
                    amountMinorUnits: UInt64(row["amount"] as Int64), currency: row["currency"],
                    refundedMinorUnits: UInt64(row["refunded"] as Int64), reason: row["reason"],
                    receipt: Array(row["receipt"] as Data), at: Timestamp(millisecondsSince1970: UInt64(row["at"] as Int64)))
            }
            return (payment, events, refunds)
        }
    }

    /// Ends, as `expired`, the payments still kept open whose request expired more than `grace` ms before `now`: no
    /// machine holds them open any more, and a daemon stopped without ending them (a crash) would leave them open, and
    /// kept, for ever. Returns how many it ended.
    @discardableResult
    public func endLapsed(at now: Timestamp, grace: UInt64) throws(DaemonStoreError) -> Int {
        try store.write(failing: Self.failure) { db in
            var ended = 0
            for row in try Row.fetchAll(db, sql: "SELECT id, request FROM history_payments WHERE ended = 0 AND status = 'open'") {
                let request = try PaymentRequest(encoded: Array(row["request"] as Data))
                guard request.expiresAt.adding(milliseconds: grace) < now else { continue }
                try db.execute(
                    sql: "UPDATE history_payments SET status = 'expired', ended = 1, updated_at = ? WHERE id = ?",
                    arguments: [Int64(now.millisecondsSince1970), row["id"] as Int64])
                ended += 1
            }
            return ended
        }
    }

    /// Forgets the ended payments last changed before `cutoff`, with their events and refunds; never an open one.
    /// Returns how many payments it forgot.
    @discardableResult
    public func prune(endedBefore cutoff: Timestamp) throws(DaemonStoreError) -> Int {
        try store.write(failing: Self.failure) { db in
            let old = "SELECT id FROM history_payments WHERE ended = 1 AND updated_at < ?"
            let arguments: StatementArguments = [Int64(cutoff.millisecondsSince1970)]
            try db.execute(sql: "DELETE FROM history_events WHERE payment IN (\(old))", arguments: arguments)
            try db.execute(
                sql: """
                    DELETE FROM history_refunds WHERE (merchant_id, payment_id) IN
                        (SELECT merchant_id, payment_id FROM history_payments WHERE id IN (\(old)))
                    """,
                arguments: arguments)
            try db.execute(sql: "DELETE FROM history_payments WHERE id IN (\(old))", arguments: arguments)
            return db.changesCount
        }
    }

    private static func payment(_ row: Row) throws -> HistoryPayment {
        HistoryPayment(
            request: try PaymentRequest(encoded: Array(row["request"] as Data)), status: row["status"], ended: row["ended"],
            totalMinorUnits: (row["total"] as Int64?).map(UInt64.init), tipMinorUnits: (row["tip"] as Int64?).map(UInt64.init),
            counterpart: row["counterpart"], receipt: try (row["receipt"] as Data?).map { try Receipt(encoded: Array($0)) },
            createdAt: Timestamp(millisecondsSince1970: UInt64(row["created_at"] as Int64)),
            updatedAt: Timestamp(millisecondsSince1970: UInt64(row["updated_at"] as Int64)),
            refundedMinorUnits: UInt64(row["refunded"] as Int64? ?? 0))
    }

    /// The receipt to keep: the new one, unless it would replace a settled one with one that is not.
    private static func newer(_ new: Receipt?, than kept: Receipt?) -> Receipt? {
        guard let new else { return nil }
        return kept?.status == .settled && new.status != .settled ? nil : new
    }

    /// A cursor's (created_at, id): what `list` gave as `next`.
    private static func position(_ cursor: String) throws(DaemonStoreError) -> (Int64, Int64) {
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let created = Int64(parts[0]), let id = Int64(parts[1]) else {
            throw DaemonStoreError(.invalidQuery, "\(cursor) is not a cursor this history gave")
        }
        return (created, id)
    }
}
