import BlepayProtocol

/// How near each payment waiting for settlement is to its deadline: the expiry of the voucher it was paid under.
/// Until then the ledger surely takes it; after, only within its grace, which a daemon does not count on. A device
/// that cannot reach the ledger warns at half the time from keeping a payment to that deadline, again at nine
/// tenths, and once more when it has passed: each once per payment, while it waits.
public struct SettlementDeadlines: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case half = 50
        case late = 90
        case past = 100

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One payment waiting: when it was kept, and its voucher's expiry.
    public struct Waiting: Sendable, Hashable {
        public let payment: PaymentID
        public let keptAt: Timestamp
        public let deadline: Timestamp

        public init(payment: PaymentID, keptAt: Timestamp, deadline: Timestamp) {
            self.payment = payment
            self.keptAt = keptAt
            self.deadline = deadline
        }
    }

    public struct Warning: Sendable, Hashable {
        public let waiting: Waiting
        public let level: Level

        public init(waiting: Waiting, level: Level) {
            self.waiting = waiting
            self.level = level
        }
    }

    private var warned: [PaymentID: Level] = [:]

    public init() {}

    /// The warnings due at `now` for what waits; a payment no longer waiting is forgotten.
    public mutating func check(_ waiting: [Waiting], at now: Timestamp) -> [Warning] {
        var warnings: [Warning] = []
        var still: [PaymentID: Level] = [:]
        for item in waiting {
            let before = warned[item.payment]
            guard let level = Self.level(item, at: now) else { continue }
            if before.map({ $0 < level }) ?? true { warnings.append(Warning(waiting: item, level: level)) }
            still[item.payment] = max(level, before ?? level)
        }
        warned = still
        return warnings
    }

    private static func level(_ item: Waiting, at now: Timestamp) -> Level? {
        let kept = item.keptAt.millisecondsSince1970, deadline = item.deadline.millisecondsSince1970
        let at = now.millisecondsSince1970
        if at >= deadline { return .past }
        let span = deadline - min(kept, deadline), elapsed = at - min(kept, at)
        if elapsed * 10 >= span * 9 { return .late }
        if elapsed * 2 >= span { return .half }
        return nil
    }
}
