import BlepayProtocol

/// How long a driver waits before each status look-up of a payment whose outcome is unknown: `first`, doubling
/// per attempt up to 30 s, so that a ledger that is away is not hammered and one that is back is asked soon.
struct LookUpBackoff {
    let first: Duration
    private var attempts: [PaymentID: Int] = [:]

    init(first: Duration) { self.first = first }

    /// The pause before the next look-up of `id`.
    mutating func next(_ id: PaymentID) -> Duration {
        let attempt = attempts[id, default: 0]
        attempts[id] = attempt + 1
        return min(first * (1 << min(attempt, 16)), .seconds(30))
    }

    /// The outcome is known: the next unknown starts from `first` again.
    mutating func answered(_ id: PaymentID, _ outcome: LedgerOutcome) {
        if case .unknown = outcome { return }
        attempts[id] = nil
    }
}
