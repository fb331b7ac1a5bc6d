import GRDB

/// The state file: opened (created if missing) and migrated before anything else runs. A commit is on disk when it
/// returns (`synchronous = FULL`), which is what lets a daemon sign or answer only after its state is durable.
public final class DaemonStore: Sendable {
    /// The file's name in the daemon's state directory.
    public static let fileName = "state.sqlite"

    let queue: DatabaseQueue

    /// Opens the file at `path` (in the daemon's 0700 state directory), creating it if it is missing, and brings
    /// its schema up to date.
    public init(path: String) throws(DaemonStoreError) {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // Statement journals and sorts in memory: otherwise most transactions create, unlink and write a file.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            // Set once the file is open: turning WAL on, GRDB sets NORMAL after the connection's own setup.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // A file that is not a database fails here, before any migration could write to it.
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        } catch {
            throw DaemonStoreError(.unavailable, "cannot open \(path): \(error)")
        }
        try Schema.migrate(queue, path: path)
        self.queue = queue
    }

    /// Runs `body` in one transaction, committed (and on disk) before this returns; any failure is reported as
    /// `failure` says, naming the state file's error.
    func write<T, E: Error>(failing failure: (String) -> E, _ body: (Database) throws -> T) throws(E) -> T {
        do {
            return try queue.write(body)
        } catch {
            throw failure("the state file failed: \(error)")
        }
    }

    func read<T, E: Error>(failing failure: (String) -> E, _ body: (Database) throws -> T) throws(E) -> T {
        do {
            return try queue.read(body)
        } catch {
            throw failure("the state file failed: \(error)")
        }
    }
}
