import BlepayProtocol
import Foundation
import GRDB

extension SettlementQueue {
    /// One payment kept for settlement, as an operator sees it.
    public struct Entry: Sendable, Hashable {
        public enum State: Sendable, Hashable {
            /// Waits for the next batch.
            case waiting
            /// In the batch sent to the ledger and not answered yet.
            case sending
            /// The ledger's verdict, and when the answer was stored.
            case ended(Outcome, at: Timestamp)
        }

        public let request: PaymentRequest
        public let acceptance: PaymentAcceptance
        public let queuedAt: Timestamp
        public let state: State
    }

    /// Every payment still waiting (oldest first), then the `ended` most recently settled or refused (newest first).
    public func entries(ended: Int = 100) throws(QueueError) -> [Entry] {
        try store.read(failing: Self.failure) { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(Self.columns) FROM offline_payments WHERE outcome IS NULL ORDER BY queued_at, payment_id")
                + Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(Self.columns) FROM offline_payments WHERE outcome IS NOT NULL
                        ORDER BY ended_at DESC, payment_id LIMIT ?
                        """,
                    arguments: [ended])
            return try rows.map(Self.entry)
        }
    }

    /// The payment kept under this id, whatever its state: nil if none is.
    public func entry(of payment: PaymentID) throws(QueueError) -> Entry? {
        try store.read(failing: Self.failure) { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.columns) FROM offline_payments WHERE payment_id = ?", arguments: [Data(payment.bytes)]
            ).map(Self.entry)
        }
    }

    private static let columns = "request, acceptance, queued_at, batch_id, outcome, ended_at"

    private static func entry(_ row: Row) throws -> Entry {
        let state: Entry.State = if let outcome = row["outcome"] as String? {
            .ended(outcome == "settled" ? .settled : .refused(outcome), at: timestamp(row["ended_at"]))
        } else if row["batch_id"] as Int64? != nil { .sending } else { .waiting }
        return Entry(
            request: try PaymentRequest(encoded: Array(row["request"] as Data)),
            acceptance: try PaymentAcceptance(encoded: Array(row["acceptance"] as Data)),
            queuedAt: timestamp(row["queued_at"]), state: state)
    }

    private static func timestamp(_ milliseconds: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: UInt64(max(0, milliseconds)))
    }
}
