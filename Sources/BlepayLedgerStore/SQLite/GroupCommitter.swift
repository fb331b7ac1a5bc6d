import Dispatch
import GRDB
import Logging
import Synchronization

/// Group commit for SQLite: one writer thread takes every transaction waiting, runs each in a savepoint inside one
/// database transaction, commits once (one fsync for all), and only then tells each caller its result. A caller
/// therefore never hears of a change before it is durable, and a failed commit fails every transaction in it.
final class GroupCommitter: Sendable {
    typealias Job = @Sendable (Database) -> Result<any Sendable, any Error>
    typealias Completion = @Sendable (Result<any Sendable, any Error>) -> Void

    private let pool: DatabasePool
    private let logger: Logger
    /// Told after each commit, once its callers have their results (the checkpointer's cue; it may hold the writer).
    private let committed: @Sendable () -> Void
    private let queue = DispatchQueue(label: "blepay.ledger.sqlite-writer")
    private let state = Mutex(State())
    /// Bounds one commit, so a flood of writers still sees steady latency.
    private let maximumGroup = 256

    private struct State: ~Copyable {
        var waiting: [(Job, Completion)] = []
        var draining = false
    }

    init(pool: DatabasePool, logger: Logger, committed: @escaping @Sendable () -> Void) {
        self.pool = pool
        self.logger = logger
        self.committed = committed
    }

    func submit(_ job: @escaping Job, completion: @escaping Completion) {
        let start = state.withLock { state in
            state.waiting.append((job, completion))
            defer { state.draining = true }
            return !state.draining
        }
        if start { queue.async { self.drain() } }
    }

    private func drain() {
        while true {
            let group: [(Job, Completion)] = state.withLock { state in
                let taken = Array(state.waiting.prefix(maximumGroup))
                state.waiting.removeFirst(taken.count)
                if taken.isEmpty { state.draining = false }
                return taken
            }
            guard !group.isEmpty else { return }
            var results: [Result<any Sendable, any Error>] = []
            var succeeded = false
            do {
                try pool.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        results = []
                        for (job, _) in group {
                            var result: Result<any Sendable, any Error> = .failure(StorageError(.unavailable, "not run"))
                            // A job's failure (a refusal, or a statement error such as a constraint) undoes that job
                            // only; if SQLite itself gave up the transaction, the rollback throws and fails the group.
                            try db.inSavepoint {
                                result = job(db)
                                return result.isSuccess ? .commit : .rollback
                            }
                            results.append(result)
                        }
                        return .commit
                    }
                }
                succeeded = true
            } catch {
                logger.error("sqlite commit failed", metadata: ["error": "\(error)", "transactions": "\(group.count)"])
                let failure = StorageError(.unavailable, "\(error)")
                results = group.map { _ in .failure(failure) }
            }
            for ((_, completion), result) in zip(group, results) { completion(result) }
            if succeeded { committed() }
        }
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
