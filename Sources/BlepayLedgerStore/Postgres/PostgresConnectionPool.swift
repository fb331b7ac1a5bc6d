import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// Up to `size` connections, opened when first needed and handed to one transaction at a time; waiting
/// transactions are served in order. A broken connection is closed and its place opened again on demand.
actor PostgresConnectionPool {
    private enum Lease {
        case connection(PostgresConnection)
        /// A place to open a new connection in, already counted.
        case open
    }

    private let size: Int
    private let configuration: PostgresConnection.Configuration
    private let address: String
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger
    private var idle: [PostgresConnection] = []
    /// Connections open or being opened, idle or in use.
    private var opened = 0
    private var waiters: [CheckedContinuation<Lease, any Error>] = []
    private var nextID = 0
    private var closed = false

    init(size: Int, configuration: PostgresStorage.Configuration, tls: PostgresConnection.Configuration.TLS,
        group: MultiThreadedEventLoopGroup, logger: Logger)
    {
        self.size = size
        self.configuration = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls
        )
        address = "\(configuration.username)@\(configuration.host):\(configuration.port)/\(configuration.database)"
        self.group = group
        self.logger = logger
    }

    func acquire() async throws -> PostgresConnection {
        guard !closed else { throw StorageError(.unavailable, "the PostgreSQL storage is closed") }
        while let connection = idle.popLast() {
            if !connection.isClosed { return connection }
            opened -= 1
        }
        if opened < size {
            opened += 1
            return try await open()
        }
        switch try await withCheckedThrowingContinuation({ waiters.append($0) }) {
        case .connection(let connection): return connection
        case .open: return try await open()
        }
    }

    func release(_ connection: PostgresConnection, broken: Bool) {
        if closed || broken || connection.isClosed {
            opened -= 1
            connection.close().whenComplete { _ in }
            offerPlace()
        } else if !waiters.isEmpty {
            waiters.removeFirst().resume(returning: .connection(connection))
        } else {
            idle.append(connection)
        }
    }

    /// Closes the idle connections and refuses new transactions; connections in use are closed when released.
    /// Returns false if the pool was closed already.
    func close() async -> Bool {
        guard !closed else { return false }
        closed = true
        for waiter in waiters { waiter.resume(throwing: StorageError(.unavailable, "the PostgreSQL storage is closed")) }
        waiters = []
        let connections = idle
        idle = []
        opened -= connections.count
        for connection in connections { try? await connection.close() }
        return true
    }

    private func open() async throws -> PostgresConnection {
        nextID += 1
        do {
            let connection = try await PostgresConnection.connect(
                on: group.next(), configuration: configuration, id: nextID, logger: logger
            )
            guard !closed else {  // closed while connecting
                opened -= 1
                connection.close().whenComplete { _ in }
                throw StorageError(.unavailable, "the PostgreSQL storage is closed")
            }
            return connection
        } catch let error as StorageError {
            throw error
        } catch {
            opened -= 1
            offerPlace()
            throw StorageError(.unavailable, "cannot connect to PostgreSQL at \(address): \(Self.describe(error))")
        }
    }

    /// Lets the first waiting transaction open a connection in a free place.
    private func offerPlace() {
        guard !closed, !waiters.isEmpty, opened < size else { return }
        opened += 1
        waiters.removeFirst().resume(returning: .open)
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        if let info = error.serverInfo {
            return "\(info[.message] ?? "error") (SQLSTATE \(info[.sqlState] ?? "?"))"
        }
        return error.underlying.map { "\(error.code): \($0)" } ?? "\(error.code)"
    }
}
