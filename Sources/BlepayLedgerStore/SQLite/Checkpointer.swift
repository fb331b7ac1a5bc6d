import Dispatch
import GRDB
import Logging
import Synchronization

/// Copies the WAL back into the database file on a connection and thread of its own, so the writer never does:
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on the one writer thread, with
/// its fsync of the database file. A checkpoint is scheduled by a commit and runs `delay` later (so many commits
/// share one); with nothing committed nothing runs. PASSIVE copies what it can without waiting for anyone.
///
/// Under steady writes the WAL never starts over by itself: a commit starts it over only if every frame is back in
/// the database file and no reader is still on its frames, and by then the next commits have appended more. A
/// RESTART checkpoint run beside the writer does not help either: it waits for the writer lock, which the writer
/// takes again at once, so it gave up after its 5 s (the WAL grew to 450 MB in 8,000 payments, and each append into
/// new blocks of the file cost the kernel a page zeroed). So once a passive checkpoint finds `restartFrames` in the
/// WAL, the writer itself holds still after its next commit (`committed()`, on its thread) while a RESTART
/// checkpoint copies the little the passive ones left and starts the WAL over.
final class Checkpointer: Sendable {
    private let connection: DatabaseQueue
    private let logger: Logger
    private let delay: DispatchTimeInterval
    private let restartFrames: Int
    private let queue = DispatchQueue(label: "blepay.ledger.sqlite-checkpoint")
    private let state = Mutex(State())
    /// Set by a passive checkpoint that found `restartFrames` or more in the WAL.
    private let restartDue = Atomic(false)
    /// How long a RESTART waits for readers still on the WAL's frames, the writer held meanwhile; if they are not
    /// done by then, a later commit tries again.
    static let readerWait = 100
    /// How long a checkpoint otherwise waits for a lock, in seconds.
    static let busyTimeout = 5

    private struct State {
        var scheduled = false
        /// A closed connection must not be used again: SQLite's calls take its freed handle.
        var closed = false
    }

    init(path: String, delay: DispatchTimeInterval, restartFrames: Int, logger: Logger)
        throws(StorageError)
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(Double(Self.busyTimeout))
        configuration.prepareDatabase { db in
            // A checkpoint syncs the WAL before it copies and the database file after.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            connection = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw StorageError(.unavailable, "cannot open \(path) to checkpoint it: \(error)")
        }
        self.logger = logger
        self.delay = delay
        self.restartFrames = restartFrames
    }

    /// The writer committed and told its callers: checkpoint soon, if no checkpoint is due already; and if the WAL is
    /// long, start it over now, on the writer's thread, so that no commit comes in between.
    func committed() {
        let schedule = state.withLock { state in
            defer { state.scheduled = true }
            return !state.scheduled && !state.closed
        }
        if schedule { queue.asyncAfter(deadline: .now() + delay) { self.run() } }
        if restartDue.exchange(false, ordering: .relaxed) { restart() }
    }

    /// Checkpoints now (PASSIVE) and returns what SQLite reported: the WAL's frames, and how many of them are in the
    /// database file.
    @discardableResult
    func checkpoint() throws -> (walFrames: Int, checkpointed: Int) {
        let result = try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        if result.walFrameCount >= restartFrames { restartDue.store(true, ordering: .relaxed) }
        return (result.walFrameCount, result.checkpointedFrameCount)
    }

    /// A RESTART checkpoint, readers waited for at most `readerWait` ms. On the checkpointer's queue, so that it
    /// never runs on a closed connection.
    private func restart() {
        queue.sync {
            guard !state.withLock({ $0.closed }) else { return }
            do {
                try connection.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA busy_timeout = \(Self.readerWait)")
                    defer { try? db.execute(sql: "PRAGMA busy_timeout = \(Self.busyTimeout * 1000)") }
                    try db.checkpoint(.restart)
                }
            } catch {
                // Readers still on the WAL: the next passive checkpoint asks again.
                logger.debug("sqlite WAL restart did not run", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Waits for a checkpoint under way, then closes the connection; the pool's last connection checkpoints the rest.
    func close() throws {
        try queue.sync {
            state.withLock { $0.closed = true }
            try connection.close()
        }
    }

    private func run() {
        // Commits from now on schedule the next checkpoint.
        let closed = state.withLock { state in
            state.scheduled = false
            return state.closed
        }
        guard !closed else { return }
        do {
            try checkpoint()
        } catch {
            // Busy or closed: the WAL keeps the pages and the next commit schedules another attempt.
            logger.debug("sqlite checkpoint did not run", metadata: ["error": "\(error)"])
        }
    }
}
