import BlepayPayments
import BlepayProtocol

/// The payments a daemon has seen and where each stands, for its control API's status and list calls. The newest
/// `capacity` are kept; the ledger holds the lasting record.
public struct PaymentBook: Sendable {
    public enum Status: Sendable, Hashable {
        /// Shown to the customer, or offered by the business, and not answered yet.
        case open
        /// Accepted; the ledger is executing it.
        case accepted
        case finished
        case cancelled
        case expired
        /// Another customer paid this request.
        case otherPaid
        case failed(PaymentErrorCode)

        public var isFinal: Bool { self != .open && self != .accepted }

        /// The stable name the control API and CLI use.
        public var name: String {
            switch self {
            case .open: "open"
            case .accepted: "accepted"
            case .finished: "finished"
            case .cancelled: "cancelled"
            case .expired: "expired"
            case .otherPaid: "other-paid"
            case .failed: "failed"
            }
        }
    }

    public struct Entry: Sendable, Hashable {
        public let request: PaymentRequest
        /// The connection that showed it (customer), or the customer that accepted it (business).
        public var peer: PeerID?
        public var status: Status
        public var receipt: Receipt?
    }

    public let capacity: Int
    private var entries: [PaymentID: Entry] = [:]
    private var order: [PaymentID] = []

    public init(capacity: Int = 1000) { self.capacity = capacity }

    public func entry(_ id: PaymentID) -> Entry? { entries[id] }

    /// Whether a payment is still open or accepted: a stopping daemon waits until each has ended with its event.
    var hasUnended: Bool { entries.values.contains { !$0.status.isFinal } }

    /// Newest first.
    public var all: [Entry] { order.reversed().compactMap { entries[$0] } }

    mutating func add(_ request: PaymentRequest, from peer: PeerID?) {
        guard entries[request.paymentID] == nil else { return }
        entries[request.paymentID] = Entry(request: request, peer: peer, status: .open, receipt: nil)
        order.append(request.paymentID)
        if order.count > capacity { entries[order.removeFirst()] = nil }
    }

    /// A payment's new status; a final status is never changed again.
    mutating func update(_ id: PaymentID, to status: Status, peer: PeerID? = nil, receipt: Receipt? = nil) {
        guard var entry = entries[id], !entry.status.isFinal else { return }
        entry.status = status
        entry.peer = peer ?? entry.peer
        entry.receipt = receipt ?? entry.receipt
        entries[id] = entry
    }
}
