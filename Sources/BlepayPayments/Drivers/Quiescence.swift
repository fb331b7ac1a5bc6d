/// Lets a stopping driver wait, without polling, until it has nothing left to finish (no payment open, for a business
/// no withdrawal on its way to the ledger): once stopping, the driver calls `check` after every input and every
/// answer, and `wait` returns at the first check that finds it idle, or after the limit.
struct Quiescence: Sendable {
    private let signal = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    func check(_ busy: Bool) {
        if !busy { signal.continuation.yield() }
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
