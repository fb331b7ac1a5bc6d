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
            let columns = "request, acceptance, queued_at, batch_id, outcome, ended_at"
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(columns) FROM offline_payments WHERE outcome IS NULL ORDER BY queued_at, payment_id")
                + Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(columns) FROM offline_payments WHERE outcome IS NOT NULL
                        ORDER BY ended_at DESC, payment_id LIMIT ?
                        """,
                    arguments: [ended])
            return try rows.map { row in
                let state: Entry.State = if let outcome = row["outcome"] as String? {
                    .ended(outcome == "settled" ? .settled : .refused(outcome), at: Self.timestamp(row["ended_at"]))
                } else if row["batch_id"] as Int64? != nil { .sending } else { .waiting }
                return Entry(
                    request: try PaymentRequest(encoded: Array(row["request"] as Data)),
                    acceptance: try PaymentAcceptance(encoded: Array(row["acceptance"] as Data)),
                    queuedAt: Self.timestamp(row["queued_at"]), state: state)
            }
        }
    }

    private static func timestamp(_ milliseconds: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: UInt64(max(0, milliseconds)))
    }
}
