import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The shared ledger database: PostgreSQL through postgres-nio, so several stateless ledger processes can keep
/// one set of books. Writes run at READ COMMITTED and serialize on the rows they lock (`SELECT … FOR UPDATE`);
/// a transaction the database refuses with a serialization failure, a deadlock or a unique violation (two
/// processes inserting the same new row) is run again whole. Reads run on a REPEATABLE READ snapshot.
///
/// Transaction bodies are synchronous, so each runs on a thread of the storage's own thread pool, one per
/// connection; statements are queued as the body gives them and sent when it reads an answer (`PostgresTransaction`),
/// so the reads an operation sends together and the writes before COMMIT each cost the thread one wait. The event
/// loop is never blocked.
public final class PostgresStorage: LedgerStorage {
    public struct Configuration: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String
        public var database: String
        /// How many connections (and so concurrent transactions) the storage keeps at most.
        public var connections: Int
        /// TLS to the server; `caFile` (PEM) holds the roots `verifyFull` trusts instead of the system's.
        public var tls = PostgresTLSMode.disable
        public var caFile: String?

        public init(
            host: String = "127.0.0.1", port: Int = 5432, username: String, password: String, database: String,
            connections: Int = 8
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.connections = connections
        }

        /// Parses `postgres://user:password@host:port/database` (`postgresql://` too; the port defaults to 5432,
        /// the database to the user's name).
        public init(url: String, connections: Int = 8) throws(StorageError) {
            guard let components = URLComponents(string: url),
                components.scheme == "postgres" || components.scheme == "postgresql",
                let host = components.host, !host.isEmpty, let username = components.user, !username.isEmpty
            else { throw StorageError(.unavailable, "not a PostgreSQL URL (postgres://user:password@host:port/database)") }
            let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
            self.init(
                host: host, port: components.port ?? 5432, username: username, password: components.password ?? "",
                database: database.isEmpty ? username : database, connections: connections
            )
        }
    }

    public var dialect: SQLDialect { .postgres }
    public let configuration: Configuration
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let threadPool: NIOThreadPool
    private let pool: PostgresConnectionPool
    private let waited = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)

    /// How many times transactions' threads have waited for the database so far, however many statements each wait
    /// confirms.
    public var waits: Int { waited.load(ordering: .relaxed) }
    /// How many statements transactions have sent the database so far (merged writes count once).
    public var statements: Int { sent.load(ordering: .relaxed) }

    /// How many times a transaction is tried when the database keeps asking for a retry.
    static let attempts = 10
    /// The key of the advisory lock migrations hold, so ledger processes starting together migrate one by one.
    static let migrationLock: Int64 = 0x626C_6570_6179  // "blepay"

    /// Connects to the database (failing with `storage.unavailable` if it cannot); further connections are
    /// opened when needed, up to `configuration.connections`.
    public init(configuration: Configuration, logger: Logger) async throws {
        let size = max(1, configuration.connections)
        let tls = try configuration.connectionTLS()
        self.configuration = configuration
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        threadPool = NIOThreadPool(numberOfThreads: size)
        threadPool.start()
        pool = PostgresConnectionPool(size: size, configuration: configuration, tls: tls, group: group, logger: logger)
        do {
            await pool.release(try await pool.acquire(), broken: false)
        } catch {
            try? await shutdown()
            throw error
        }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await transaction("BEGIN ISOLATION LEVEL READ COMMITTED", body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
    }

    public func migrate() async throws {
        try await write { tx in
            try tx.run("SELECT pg_advisory_xact_lock(?)", [.integer(Self.migrationLock)])
            try Schema.migrate(tx)
        }
    }

    /// Closes every connection and stops the storage's threads. Transactions still running finish first.
    public func close() async throws {
        guard await pool.close() else { return }
        try await shutdown()
    }

    private func shutdown() async throws {
        try await threadPool.shutdownGracefully()
        try await group.shutdownGracefully()
    }

    /// What one attempt at a transaction came to.
    private struct Attempt<T: Sendable>: Sendable {
        var result: Result<T, any Error>
        /// The SQLSTATE of a failure that asks for the transaction to be run again.
        var retry: String?
        var connectionFailed: Bool
        var bodyRan: Bool
        var waits: Int
        var statements: Int
    }

    private func transaction<T: Sendable>(
        _ begin: String, _ body: @escaping @Sendable (any SQLTransaction) throws -> T
    ) async throws -> T {
        for attempt in 1...Self.attempts {
            let connection = try await pool.acquire()
            let outcome: Attempt<T>
            do {
                let logger = logger
                outcome = try await threadPool.runIfActive { Self.attempt(connection, begin, body, logger) }
            } catch {
                await pool.release(connection, broken: false)
                if error is CancellationError { throw error }
                throw StorageError(.unavailable, "the PostgreSQL storage is closed")
            }
            await pool.release(connection, broken: outcome.connectionFailed)
            waited.add(outcome.waits, ordering: .relaxed)
            sent.add(outcome.statements, ordering: .relaxed)
            switch outcome.result {
            case .success(let value):
                return value
            case .failure(let error) where outcome.retry != nil || (outcome.connectionFailed && !outcome.bodyRan):
                // Asked to retry, or a connection found broken before anything ran on it: run it all again.
                guard attempt < Self.attempts else {
                    guard outcome.retry != nil else { throw error }
                    throw StorageError(.conflict, "the database refused the transaction \(attempt) times; last: \(error)")
                }
                logger.debug("retrying a transaction", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                let ceiling = min(1 << attempt, 100)
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...ceiling)))
            case .failure(let error):
                throw error
            }
        }
        preconditionFailure("the last attempt returns or throws")
    }

    /// One attempt, on a thread-pool thread: BEGIN, the body, COMMIT; ROLLBACK if anything throws.
    private static func attempt<T: Sendable>(
        _ connection: PostgresConnection, _ begin: String, _ body: (any SQLTransaction) throws -> T, _ logger: Logger
    ) -> Attempt<T> {
        let tx = PostgresTransaction(connection: connection, logger: logger)
        var rolledBack = false
        do {
            tx.send(begin)
            let value = try body(tx)
            try tx.finish()
            // COMMIT of a transaction in which a statement failed (the body went on past the failure) rolls it
            // back and says so, without an error.
            if try tx.execute("COMMIT", []).command != "COMMIT" {
                rolledBack = true
                throw StorageError(.unavailable, "the transaction was rolled back: a statement in it failed")
            }
            return Attempt(result: .success(value), retry: nil, connectionFailed: false, bodyRan: true,
                waits: tx.waits, statements: tx.statements)
        } catch {
            if !tx.connectionFailed && !rolledBack { _ = try? tx.execute("ROLLBACK", []) }
            // Retried if the failure that ended it asked for a retry.
            let retry = rolledBack
                ? tx.retryableFailures.values.first
                : (error as? StorageError).flatMap { tx.retryableFailures[$0] }
            // BEGIN is confirmed with the body's first statement: a connection that failed before it ran nothing.
            return Attempt(result: .failure(error), retry: retry, connectionFailed: tx.connectionFailed,
                bodyRan: tx.confirmed > 0, waits: tx.waits, statements: tx.statements)
        }
    }
}
