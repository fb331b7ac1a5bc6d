import Foundation

/// Wakes long-polling status reads. A change made by this process wakes them at once; a change made by another
/// ledger process on the same database is seen at the next poll.
actor PaymentWatch {
    private var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    let pollInterval: Duration

    init(pollInterval: Duration = .milliseconds(250)) { self.pollInterval = pollInterval }

    /// Something a waiter may be waiting for changed.
    func changed() {
        let woken = waiters
        waiters = [:]
        for continuation in woken.values { continuation.resume() }
    }

    /// Returns at the next change, the next poll or `deadline`, whichever is first.
    func nextChange(before deadline: ContinuousClock.Instant) async {
        let id = UUID()
        let wake = min(deadline, .now + pollInterval)
        Task { [weak self] in
            try? await Task.sleep(until: wake)
            await self?.wake(id)
        }
        await withCheckedContinuation { continuation in waiters[id] = continuation }
    }

    private func wake(_ id: UUID) { waiters.removeValue(forKey: id)?.resume() }
}
