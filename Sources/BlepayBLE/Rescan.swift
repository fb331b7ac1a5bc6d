/// When the business next starts discovery afresh, while it has room for another customer: some controllers report
/// an advertiser once per scan, so a customer whose report came while its link was being torn down is seen again
/// only by a new scan. That happens around activity (a customer served, a link ended), so the first restart comes
/// `first` after it and each further one twice as long after the last, up to `limit`: a business left idle wakes
/// every few minutes, not every 10 s forever, and a returning customer still reported once per scan is found
/// within `limit`.
struct Rescan {
    static let limit: Duration = .seconds(160)

    private let first: Duration
    private var interval: Duration
    /// When discovery is next started afresh.
    private(set) var due: ContinuousClock.Instant

    init(first: Duration, at now: ContinuousClock.Instant) {
        self.first = first
        interval = first
        due = now + first
    }

    /// A customer was connected to or its service ended: the next restart is `first` from now.
    mutating func activity(at now: ContinuousClock.Instant) {
        interval = first
        due = now + first
    }

    /// Discovery was started afresh: the next restart waits twice as long as this one did, up to `limit`.
    mutating func restarted(at now: ContinuousClock.Instant) {
        interval = min(interval * 2, max(first, Self.limit))
        due = now + interval
    }
}
