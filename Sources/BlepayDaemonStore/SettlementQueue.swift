import BlepayProtocol
import Foundation
import GRDB

/// The business's payments accepted while offline, each kept until the ledger has settled or refused it. A payment
/// is on disk before `enqueue` returns, so the business reports it only once it cannot be lost. It goes to the ledger
/// in a batch whose items and idempotency key are on disk before the batch is first sent: until the ledger's answer
/// closes it, the same batch is handed out again, item for item under the same key, so a retry after a crash or a
/// lost answer can never settle a payment twice. Payments queued meanwhile wait for the next batch.
public struct SettlementQueue: Sendable {
    /// One batch to send: the items in their stored order, and the key to send them under.
    public struct Batch: Sendable, Hashable {
        public let id: Int64
        public let idempotencyKey: String
        public let items: [Item]
    }

    public struct Item: Sendable, Hashable {
        public let request: PaymentRequest
        public let acceptance: PaymentAcceptance
    }

    /// What the ledger's answer to a batch said of one payment: final either way.
    public enum Outcome: Sendable, Hashable {
        /// Settled, now or by an earlier batch.
        case settled
        /// Refused for good, with the ledger's stable code.
        case refused(String)
    }

    /// The unsettled payments: how many, how much in each currency, and when the oldest was queued.
    public struct Summary: Sendable, Hashable {
        public let count: Int
        public let totals: [String: UInt64]
        public let oldest: Timestamp?

        public init(count: Int, totals: [String: UInt64], oldest: Timestamp?) {
            self.count = count
            self.totals = totals
            self.oldest = oldest
        }
    }

    /// The merchant's limits on what may wait for the ledger: a payment that would go past one is not kept.
    public struct Limits: Sendable, Hashable {
        public var maximumCount: Int
        /// Per currency, amounts plus tips.
        public var maximumTotalMinorUnits: UInt64
        /// Once the oldest waiting payment is this old, nothing more is kept until the ledger is reached.
        public var maximumAgeMilliseconds: UInt64
        /// What may wait under any one voucher (one customer's device), amounts plus tips: however large a voucher
        /// the ledger issued, the merchant bounds what one device may owe it before the ledger has had its say.
        public var maximumPerVoucherMinorUnits: UInt64

        public init(
            maximumCount: Int, maximumTotalMinorUnits: UInt64, maximumAgeMilliseconds: UInt64,
            maximumPerVoucherMinorUnits: UInt64 = .max
        ) {
            self.maximumCount = maximumCount
            self.maximumTotalMinorUnits = maximumTotalMinorUnits
            self.maximumAgeMilliseconds = maximumAgeMilliseconds
            self.maximumPerVoucherMinorUnits = maximumPerVoucherMinorUnits
        }

        /// No limit: a customer keeps a copy of every payment its businesses kept.
        public static let unlimited = Limits(maximumCount: .max, maximumTotalMinorUnits: .max, maximumAgeMilliseconds: .max)
    }

    /// Batches carry at most this many payments (the ledger's limit).
    public static let batchLimit = 100

    let store: DaemonStore
    static func failure(_ why: String) -> QueueError { QueueError(.storage, why) }

    public init(store: DaemonStore) { self.store = store }

    /// Keeps an accepted payment; keeping the same pair again changes nothing, and another acceptance of a payment
    /// already kept is refused (`queue.conflict`). With `limits`, a payment that would take what waits past one of
    /// them is refused (`queue.limit-reached`), checked in the same transaction as the keeping.
    public func enqueue(
        _ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp, limits: Limits? = nil
    ) throws(QueueError) {
        guard request.paymentID == acceptance.paymentID else {
            throw QueueError(.conflict, "the acceptance is of payment \(acceptance.paymentID), not \(request.paymentID)")
        }
        let refusal = try store.write(failing: Self.failure) { db -> QueueError? in
            let id = Data(request.paymentID.bytes)
            if let kept = try Data.fetchOne(db, sql: "SELECT acceptance FROM offline_payments WHERE payment_id = ?", arguments: [id]) {
                return kept == Data(acceptance.encoded)
                    ? nil : QueueError(.conflict, "payment \(request.paymentID) is queued with another acceptance")
            }
            if let limits, let reached = try Self.reached(limits, adding: acceptance, at: now, in: db) {
                return QueueError(.limitReached, reached)
            }
            if let presented = acceptance.preAuthorization, let reused = try Self.clash(presented, acceptance.total, in: db) {
                return reused
            }
            try db.execute(
                sql: """
                    INSERT INTO offline_payments (payment_id, request, acceptance, currency, total, queued_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id, Data(request.encoded), Data(acceptance.encoded), acceptance.total.currency.code,
                    Int64(acceptance.total.minorUnits), Int64(now.millisecondsSince1970),
                ])
            if let presented = acceptance.preAuthorization { try Self.claim(presented, acceptance.total, for: id, in: db) }
            return nil
        }
        if let refusal { throw refusal }
    }

    /// Why the voucher use a payment presents cannot be accepted here, if this business accepted the same use, or an
    /// overlapping part of the voucher, for another payment: the customer signed two payments against one part of
    /// its limit.
    private static func clash(_ presented: PreAuthorizationPresentation, _ total: Money, in db: Database) throws -> QueueError? {
        let start = Int64(presented.spentBeforeMinorUnits)
        let earlier = try Int64.fetchOne(
            db,
            sql: """
                SELECT sequence FROM voucher_claims
                WHERE voucher_id = ? AND (sequence = ? OR (spent_before < ? AND ? < spent_before + total))
                """,
            arguments: [Data(presented.voucher.voucherID.bytes), Int64(presented.sequence), start + Int64(total.minorUnits), start])
        return earlier.map {
            QueueError(.voucherReused, "voucher \(presented.voucher.voucherID) use \(presented.sequence) clashes with its use \($0) accepted before")
        }
    }

    /// Records the voucher use a kept payment presents.
    private static func claim(_ presented: PreAuthorizationPresentation, _ total: Money, for payment: Data, in db: Database) throws {
        try db.execute(
            sql: "INSERT INTO voucher_claims (voucher_id, sequence, spent_before, total, payment_id) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                Data(presented.voucher.voucherID.bytes), Int64(presented.sequence), Int64(presented.spentBeforeMinorUnits),
                Int64(total.minorUnits), payment,
            ])
    }

    /// Which limit keeping `total` more would pass, if any.
    private static func reached(_ limits: Limits, adding acceptance: PaymentAcceptance, at now: Timestamp, in db: Database)
        throws -> String?
    {
        let total = acceptance.total
        let waiting = try Row.fetchOne(
            db,
            sql: """
                SELECT count(*) AS n, min(queued_at) AS oldest,
                    coalesce(sum(CASE WHEN currency = ? THEN total ELSE 0 END), 0) AS total
                FROM offline_payments WHERE outcome IS NULL
                """,
            arguments: [total.currency.code])
        let count: Int = waiting?["n"] ?? 0
        let sum = UInt64(waiting?["total"] as Int64? ?? 0)
        if count >= limits.maximumCount { return "\(count) payments wait for the ledger already" }
        if sum + total.minorUnits > limits.maximumTotalMinorUnits {
            return "\(sum) \(total.currency.code) waits for the ledger already"
        }
        if let oldest = waiting?["oldest"] as Int64?,
            now.millisecondsSince1970 - min(now.millisecondsSince1970, UInt64(oldest)) >= limits.maximumAgeMilliseconds
        {
            return "the oldest payment has waited too long for the ledger"
        }
        if let voucher = acceptance.preAuthorization?.voucher.voucherID {
            let owed = try Int64.fetchOne(
                db,
                sql: """
                    SELECT coalesce(sum(c.total), 0) FROM voucher_claims c
                    JOIN offline_payments p ON p.payment_id = c.payment_id
                    WHERE c.voucher_id = ? AND p.outcome IS NULL
                    """,
                arguments: [Data(voucher.bytes)]) ?? 0
            if UInt64(owed) + total.minorUnits > limits.maximumPerVoucherMinorUnits {
                return "\(owed) \(total.currency.code) waits for the ledger under voucher \(voucher) already"
            }
        }
        return nil
    }

    /// The batch to send: the one sent before and not yet answered, or else a new one of the payments waiting longest
    /// (nil if none waits).
    public func batch(at now: Timestamp) throws(QueueError) -> Batch? {
        try store.write(failing: Self.failure) { db -> Batch? in
            if let open = try Row.fetchOne(db, sql: "SELECT id, idempotency_key FROM settlement_batches WHERE closed_at IS NULL") {
                return try Self.batch(id: open["id"], key: open["idempotency_key"], in: db)
            }
            let waiting = try Data.fetchAll(
                db,
                sql: """
                    SELECT payment_id FROM offline_payments WHERE outcome IS NULL AND batch_id IS NULL
                    ORDER BY queued_at, payment_id LIMIT ?
                    """,
                arguments: [Self.batchLimit])
            guard !waiting.isEmpty else { return nil }
            let key = "settle-\(UUID().uuidString.lowercased())"
            try db.execute(
                sql: "INSERT INTO settlement_batches (idempotency_key, created_at) VALUES (?, ?)",
                arguments: [key, Int64(now.millisecondsSince1970)])
            let id = db.lastInsertedRowID
            for (position, payment) in waiting.enumerated() {
                try db.execute(
                    sql: "UPDATE offline_payments SET batch_id = ?, batch_position = ? WHERE payment_id = ?",
                    arguments: [id, position, payment])
            }
            return try Self.batch(id: id, key: key, in: db)
        }
    }

    /// Applies the ledger's answer to `batch` and closes it: each payment with an outcome has ended; one without
    /// (the ledger could not decide it yet) waits for the next batch.
    public func close(_ batch: Batch, outcomes: [PaymentID: Outcome], at now: Timestamp) throws(QueueError) {
        try store.write(failing: Self.failure) { db in
            for item in batch.items {
                let id = Data(item.request.paymentID.bytes)
                switch outcomes[item.request.paymentID] {
                case .settled?:
                    try Self.end(id, "settled", at: now, in: db)
                case .refused(let code)?:
                    try Self.end(id, code, at: now, in: db)
                case nil:
                    try db.execute(
                        sql: "UPDATE offline_payments SET batch_id = NULL, batch_position = NULL WHERE payment_id = ?",
                        arguments: [id])
                }
            }
            try db.execute(
                sql: "UPDATE settlement_batches SET closed_at = ? WHERE id = ? AND closed_at IS NULL",
                arguments: [Int64(now.millisecondsSince1970), batch.id])
        }
    }

    /// The payments not settled or refused yet.
    public func summary() throws(QueueError) -> Summary {
        try store.read(failing: Self.failure) { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT currency, count(*) AS n, sum(total) AS total, min(queued_at) AS oldest
                    FROM offline_payments WHERE outcome IS NULL GROUP BY currency
                    """)
            let oldest = rows.compactMap { $0["oldest"] as Int64? }.min()
            return Summary(
                count: rows.reduce(0) { $0 + ($1["n"] as Int) },
                totals: Dictionary(uniqueKeysWithValues: rows.map { ($0["currency"] as String, UInt64($0["total"] as Int64)) }),
                oldest: oldest.map { Timestamp(millisecondsSince1970: UInt64($0)) })
        }
    }

    /// How the ledger ended the payment: nil while it waits.
    public func outcome(of payment: PaymentID) throws(QueueError) -> Outcome? {
        let code = try store.read(failing: Self.failure) { db in
            try String.fetchOne(db, sql: "SELECT outcome FROM offline_payments WHERE payment_id = ?", arguments: [Data(payment.bytes)])
        }
        return code.map { $0 == "settled" ? .settled : .refused($0) }
    }

    private static func end(_ id: Data, _ outcome: String, at now: Timestamp, in db: Database) throws {
        try db.execute(
            sql: "UPDATE offline_payments SET outcome = ?, ended_at = ?, batch_id = NULL, batch_position = NULL WHERE payment_id = ?",
            arguments: [outcome, Int64(now.millisecondsSince1970), id])
    }

    private static func batch(id: Int64, key: String, in db: Database) throws -> Batch {
        let items = try Row.fetchAll(
            db, sql: "SELECT request, acceptance FROM offline_payments WHERE batch_id = ? ORDER BY batch_position",
            arguments: [id]
        ).map { row in
            Item(
                request: try PaymentRequest(encoded: Array(row["request"] as Data)),
                acceptance: try PaymentAcceptance(encoded: Array(row["acceptance"] as Data)))
        }
        return Batch(id: id, idempotencyKey: key, items: items)
    }

}

/// Why the settlement queue refused.
public struct QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Another acceptance of a payment already queued.
        case conflict = "queue.conflict"
        /// Keeping the payment would pass one of the merchant's limits on what waits for the ledger.
        case limitReached = "queue.limit-reached"
        /// The payment presents a voucher use, or part of a voucher, that this business accepted for another payment.
        case voucherReused = "queue.voucher-reused"
        /// The state file failed.
        case storage = "queue.storage"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
