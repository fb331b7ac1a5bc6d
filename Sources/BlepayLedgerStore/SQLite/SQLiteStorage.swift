import Foundation
import GRDB
import Logging

/// The embedded ledger database: one SQLite file in WAL mode with `synchronous = FULL`, so a commit is on disk
/// before it returns. Concurrent writes are grouped: transactions that arrive while one commit is being made to
/// disk run together in the next, each in its own savepoint (one failing leaves the others whole), and share one
/// fsync. Reads run beside them on the WAL's snapshots. The writer never checkpoints: a `Checkpointer` of its own
/// does, after commits.
public final class SQLiteStorage: LedgerStorage {
    public var dialect: SQLDialect { .sqlite }
    private let pool: DatabasePool
    private let committer: GroupCommitter
    let checkpointer: Checkpointer

    /// Opens (creating if needed) the database file at `path`.
    public convenience init(path: String, logger: Logger) throws(StorageError) {
        try self.init(path: path, checkpointDelay: .milliseconds(250), restartFrames: 8192, logger: logger)
    }

    /// `checkpointDelay` and `restartFrames` as `Checkpointer` takes them.
    init(path: String, checkpointDelay: DispatchTimeInterval, restartFrames: Int, logger: Logger) throws(StorageError) {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            // Statement journals and sorts in memory: otherwise most transactions create, unlink and write a file.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Set on the writer once it is open: turning WAL on, GRDB sets NORMAL after the connection's own setup.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        } catch {
            throw StorageError(.unavailable, "cannot open \(path): \(error)")
        }
        checkpointer = try Checkpointer(path: path, delay: checkpointDelay, restartFrames: restartFrames, logger: logger)
        committer = GroupCommitter(pool: pool, logger: logger) { [checkpointer] in checkpointer.committed() }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            committer.submit { db in
                Result { try body(SQLiteTransaction(db: db)) }
            } completion: { result in
                continuation.resume(with: result.map { $0 as! T })  // the job above returns a T
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        do {
            return try await pool.read { db in try body(SQLiteTransaction(db: db)) }
        } catch let error as DatabaseError {
            throw StorageError(.unavailable, error.description)
        }
    }

    public func migrate() async throws {
        do {
            try await pool.write { db in try Schema.migrate(SQLiteTransaction(db: db)) }
        } catch let error as DatabaseError {
            throw StorageError(.unavailable, error.description)
        }
    }

    public func close() async throws {
        try checkpointer.close()
        try pool.close()
    }
}

/// One SQLite transaction's statements, through GRDB's statement cache.
struct SQLiteTransaction: SQLTransaction {
    let db: Database
    var dialect: SQLDialect { .sqlite }

    /// A statement SQLite refuses (a constraint, say) fails as PostgreSQL's do: `storage.unavailable`, naming it.
    func send(_ sql: String, _ binds: [SQLValue]) throws -> Pending<SQLResult> {
        let result: SQLResult
        do {
            let statement = try db.cachedStatement(sql: sql)
            try statement.setArguments(StatementArguments(binds.map(\.databaseValue)))
            if statement.columnCount == 0 {
                try statement.execute()
                result = SQLResult(rows: [], changed: db.changesCount)
            } else {
                let rows = try Row.fetchAll(statement).map { row in SQLRow(row.databaseValues.map(SQLValue.init)) }
                result = SQLResult(rows: rows, changed: statement.isReadonly ? 0 : db.changesCount)
            }
        } catch let error as DatabaseError {
            throw StorageError(.unavailable, "\(error.message ?? "\(error.resultCode)") while executing `\(sql)`")
        }
        return Pending { result }
    }

    func runLast(_ sql: String, _ binds: [SQLValue]) throws {
        try run(sql, binds)
    }

    func savepoint<T>(_ body: () throws -> T) throws -> T {
        var result: Result<T, any Error>!
        try db.inSavepoint {
            result = Result { try body() }
            if case .failure = result { return .rollback }
            return .commit
        }
        return try result.get()
    }
}

extension SQLValue {
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let value): value.databaseValue
        case .text(let value): value.databaseValue
        case .blob(let value): Data(value).databaseValue
        }
    }

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let value): self = .integer(value)
        case .string(let value): self = .text(value)
        case .blob(let data): self = .blob([UInt8](data))
        case .double(let value): self = .integer(Int64(value))  // never written by the ledger
        }
    }
}
