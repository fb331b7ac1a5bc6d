/// Lets a stopping driver wait, without polling, until its machine has no payment left open: once stopping, the
/// driver calls `check` after every input, and `wait` returns at the first check that finds none, or after the limit.
struct Quiescence: Sendable {
    private let signal = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    func check(_ hasUnended: Bool) {
        if !hasUnended { signal.continuation.yield() }
    }

    /// True if the machine became quiet, false if `limit` passed first.
    func wait(atMost limit: Duration) async -> Bool {
        let stream = signal.stream
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in stream { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let quiet = await group.next() ?? false
            group.cancelAll()
            return quiet
        }
    }
}
