import Dispatch
import GRDB
import Logging
import Synchronization

/// Copies the WAL back into the database file on a connection and thread of its own, so the writer never does:
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on the one writer thread, with
/// its fsync of the database file. A checkpoint is scheduled by a commit and runs `delay` later (so many commits
/// share one); with nothing committed nothing runs. PASSIVE copies what it can without waiting for anyone. Under
/// steady writes a passive checkpoint never catches up with the WAL's end, and the WAL can only start over from
/// its beginning once it has; past `restartFrames` a RESTART checkpoint waits for the writer instead, finishes the
/// little the passive ones left, and lets the next commit start the WAL over.
final class Checkpointer: Sendable {
    private let connection: DatabaseQueue
    private let logger: Logger
    private let delay: DispatchTimeInterval
    private let restartFrames: Int
    private let queue = DispatchQueue(label: "blepay.ledger.sqlite-checkpoint")
    private let state = Mutex(State())

    private struct State {
        var scheduled = false
        /// A closed connection must not be used again: SQLite's calls take its freed handle.
        var closed = false
    }

    init(path: String, delay: DispatchTimeInterval = .milliseconds(250), restartFrames: Int = 8192, logger: Logger)
        throws(StorageError)
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
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

    /// A transaction committed: checkpoint soon, if no checkpoint is due already.
    func committed() {
        let schedule = state.withLock { state in
            defer { state.scheduled = true }
            return !state.scheduled && !state.closed
        }
        if schedule { queue.asyncAfter(deadline: .now() + delay) { self.run() } }
    }

    /// Checkpoints now and returns what SQLite reported: the WAL's frames, and how many of them are in the
    /// database file.
    @discardableResult
    func checkpoint() throws -> (walFrames: Int, checkpointed: Int) {
        try connection.writeWithoutTransaction { db in
            var result = try db.checkpoint(.passive)
            if result.walFrameCount >= restartFrames { result = try db.checkpoint(.restart) }
            return (result.walFrameCount, result.checkpointedFrameCount)
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
