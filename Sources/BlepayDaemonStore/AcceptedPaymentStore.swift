import BlepayProtocol
import Foundation
import GRDB

/// The customer's acceptances whose outcome it has not learnt yet, each on disk before the acceptance is sent and
/// removed once the outcome is known: what a restarted customer daemon seeks again, so that no crash leaves it not
/// knowing whether it paid.
public struct AcceptedPaymentStore: Sendable {
    /// One acceptance as kept: the signed pair, and when it was kept.
    public struct Entry: Sendable, Hashable {
        public let request: PaymentRequest
        public let acceptance: PaymentAcceptance
        public let acceptedAt: Timestamp
    }

    private let store: DaemonStore
    private static func failure(_ why: String) -> DaemonStoreError { DaemonStoreError(.unavailable, why) }

    public init(store: DaemonStore) { self.store = store }

    /// Keeps the pair; keeping the same payment again replaces nothing (the first acceptance sent stands).
    public func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp)
        throws(DaemonStoreError)
    {
        // Both writes run for every payment a customer accepts: prepared once, as the history's are.
        try store.write(failing: Self.failure) { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO accepted_payments (payment_id, request, acceptance, accepted_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (payment_id) DO NOTHING
                    """
            ).execute(
                arguments: [
                    Data(request.paymentID.bytes), Data(request.encoded), Data(acceptance.encoded),
                    Int64(now.millisecondsSince1970),
                ])
        }
    }

    /// The outcome is known: the payment is no longer kept.
    public func remove(_ id: PaymentID) throws(DaemonStoreError) {
        try store.write(failing: Self.failure) { db in
            try db.cachedStatement(sql: "DELETE FROM accepted_payments WHERE payment_id = ?")
                .execute(arguments: [Data(id.bytes)])
        }
    }

    /// Every acceptance kept, oldest first.
    public func entries() throws(DaemonStoreError) -> [Entry] {
        try store.read(failing: Self.failure) { db in
            try Row.fetchAll(
                db, sql: "SELECT request, acceptance, accepted_at FROM accepted_payments ORDER BY accepted_at, payment_id"
            ).map { row in
                Entry(
                    request: try PaymentRequest(encoded: Array(row["request"] as Data)),
                    acceptance: try PaymentAcceptance(encoded: Array(row["acceptance"] as Data)),
                    acceptedAt: Timestamp(millisecondsSince1970: UInt64(row["accepted_at"] as Int64)))
            }
        }
    }
}
