import Foundation

/// Wakes long-polling status reads, devices' standing calls (`GET /v1/changes`) and the expiry sweeper: every write a
/// request of this process commits wakes them at once.
/// With `pollInterval` (a database other ledger processes write too), a waiting status read also looks again at
/// each poll, to see their changes; with nil (this process is the only writer), waits end only on a change or
/// their deadline. A waiter takes `changes` before it reads what it waits on, so a change committed between its
/// read and its wait is not lost.
actor ChangeWatch {
    private var waiters: [UUID: CheckedContinuation<Bool, Never>] = [:]
    /// How many changes there have been.
    private(set) var changes = 0
    let pollInterval: Duration?

    init(pollInterval: Duration?) { self.pollInterval = pollInterval }

    /// Something a waiter may be waiting for changed.
    func changed() {
        changes += 1
        let woken = waiters
        waiters = [:]
        for continuation in woken.values { continuation.resume(returning: true) }
    }

    /// Returns at once (true) if there was a change since `changes` was `seen`, else at the next change (true), or at
    /// `deadline` or the next poll if `polling` (false), whichever is first.
    @discardableResult
    func nextChange(after seen: Int, before deadline: ContinuousClock.Instant, polling: Bool = true) async -> Bool {
        guard changes == seen else { return true }
        let id = UUID()
        let wake = polling ? pollInterval.map { min(deadline, .now + $0) } ?? deadline : deadline
        let timer = Task { [weak self] in
            try? await Task.sleep(until: wake)
            await self?.wake(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before it waits: the handler below found nothing to wake.
                if Task.isCancelled { continuation.resume(returning: false) } else { waiters[id] = continuation }
            }
        } onCancel: {
            Task { await self.wake(id) }
        }
    }

    private func wake(_ id: UUID) { waiters.removeValue(forKey: id)?.resume(returning: false) }
}
