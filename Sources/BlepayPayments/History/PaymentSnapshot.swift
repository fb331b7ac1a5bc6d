import BlepayProtocol

/// Where a payment stands, as the control API reports it.
public enum PaymentStatus: Sendable, Hashable {
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

/// One payment as a machine knows it: the request, the connection that showed it (customer) or the customer that
/// accepted it (business), its status, and its receipt once finished.
public struct PaymentSnapshot: Sendable, Hashable {
    public let request: PaymentRequest
    public let peer: PeerID?
    public let status: PaymentStatus
    public let receipt: Receipt?

    public init(request: PaymentRequest, peer: PeerID?, status: PaymentStatus, receipt: Receipt?) {
        self.request = request
        self.peer = peer
        self.status = status
        self.receipt = receipt
    }
}

/// A machine's payments in the order they began, newest last. Past `capacity`, the oldest ended ones are forgotten
/// (the ledger holds the lasting record); open ones never are.
struct PaymentRecords<Record: Sendable>: Sendable {
    let capacity: Int
    private(set) var byID: [PaymentID: Record] = [:]
    private var order: [PaymentID] = []
    private let isEnded: @Sendable (Record) -> Bool

    init(capacity: Int, isEnded: @escaping @Sendable (Record) -> Bool) {
        self.capacity = capacity
        self.isEnded = isEnded
    }

    subscript(id: PaymentID) -> Record? {
        get { byID[id] }
        set {
            guard let newValue else { return }
            byID[id] = newValue
        }
    }

    /// Newest first.
    var newestFirst: [Record] { order.reversed().compactMap { byID[$0] } }

    /// Adds (or replaces, as the newest) a payment's record.
    mutating func begin(_ id: PaymentID, _ record: Record) {
        if byID.updateValue(record, forKey: id) != nil { order.removeAll { $0 == id } }
        order.append(id)
        guard order.count > capacity, let oldest = order.firstIndex(where: { byID[$0].map(isEnded) ?? true }) else { return }
        byID[order.remove(at: oldest)] = nil
    }
}
