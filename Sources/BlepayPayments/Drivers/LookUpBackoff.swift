import BlepayProtocol

/// How long a driver waits before each status look-up of a payment whose outcome is unknown: `first`, doubling
/// per attempt up to 30 s, so that a ledger that is away is not hammered and one that is back is asked soon; after
/// `patientAfter` attempts (about ten minutes) on doubling up to an hour, for an outcome that may take days.
struct LookUpBackoff {
    static let patientAfter = 24

    let first: Duration
    private var attempts: [PaymentID: Int] = [:]

    init(first: Duration) { self.first = first }

    /// The pause before the next look-up of `id`.
    mutating func next(_ id: PaymentID) -> Duration {
        let attempt = attempts[id, default: 0]
        attempts[id] = attempt + 1
        guard attempt >= Self.patientAfter else { return min(first * (1 << min(attempt, 16)), .seconds(30)) }
        return min(.seconds(30) * (1 << min(attempt - Self.patientAfter + 1, 16)), .seconds(3600))
    }

    /// The ledger answered about `id`. Unless the machine asks again (an unknown outcome, a payment the ledger
    /// does not know yet, a receipt that proves nothing), the outcome is known and the pauses start over.
    mutating func answered(_ id: PaymentID, lookingAgain: Bool) {
        if !lookingAgain { attempts[id] = nil }
    }
}
