import BlepayLedgerStore
import Foundation
import Logging
import PostgresNIO
import TestSupport

/// The two databases the ledger runs on; storage tests run once on each.
public enum StorageKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, postgres

    public var description: String { rawValue }
}

/// Where tests find PostgreSQL: `BLEPAY_TEST_POSTGRES_URL`, or the database `scripts/postgres.sh` sets up. The
/// role needs CREATEDB: every test gets a database of its own, created from this one and dropped after.
public let testPostgresURL =
    ProcessInfo.processInfo.environment["BLEPAY_TEST_POSTGRES_URL"] ?? "postgres://blepay:blepay@127.0.0.1:5432/blepay"

/// The CA that signed the test server's certificate (`scripts/postgres.sh` makes both), or
/// `BLEPAY_TEST_POSTGRES_CA`.
public let testPostgresCAFile =
    ProcessInfo.processInfo.environment["BLEPAY_TEST_POSTGRES_CA"] ?? "/etc/postgresql/15/main/blepay-tls/ca.crt"

public let testLogger = Logger(label: "blepay.test")

/// A storage for one test, in a database nothing else uses; `destroy()` closes it and deletes the database.
public final class TestStorage: Sendable {
    public let kind: StorageKind
    public let storage: any LedgerStorage
    /// The database file, for SQLite: a `blepay-ledger` process can serve it too.
    public let sqlitePath: String?
    private let cleanup: @Sendable () async throws -> Void

    init(
        kind: StorageKind, storage: any LedgerStorage, sqlitePath: String? = nil,
        cleanup: @escaping @Sendable () async throws -> Void
    ) {
        self.kind = kind
        self.storage = storage
        self.sqlitePath = sqlitePath
        self.cleanup = cleanup
    }

    public func destroy() async throws {
        try await cleanup()
    }
}

/// A test could not get a database: PostgreSQL is not running, or refused to create one.
public struct TestDatabaseError: Error, CustomStringConvertible {
    public let description: String
}

/// A fresh storage of `kind`, migrated unless `migrated` is false. PostgreSQL being unreachable is an error, never
/// a reason to skip.
public func makeStorage(_ kind: StorageKind, migrated: Bool = true) async throws -> TestStorage {
    let test: TestStorage
    switch kind {
    case .sqlite:
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("blepay-test-\(randomHex())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let path = directory.appendingPathComponent("ledger.sqlite").path
            let storage = try SQLiteStorage(path: path, logger: testLogger)
            test = TestStorage(kind: kind, storage: storage, sqlitePath: path) {
                try await storage.close()
                try FileManager.default.removeItem(at: directory)
            }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    case .postgres:
        let admin = try PostgresStorage.Configuration(url: testPostgresURL)
        let name = "blepay_test_\(randomHex())"
        try await PostgresAdmin.run("CREATE DATABASE \(name)", admin)
        var configuration = admin
        configuration.database = name
        let storage: PostgresStorage
        do {
            storage = try await PostgresStorage(configuration: configuration, logger: testLogger)
        } catch {
            try? await PostgresAdmin.drop(name, admin)
            throw error
        }
        test = TestStorage(kind: kind, storage: storage) {
            try await storage.close()
            try await PostgresAdmin.drop(name, admin)
        }
    }
    do {
        if migrated { try await test.storage.migrate() }
    } catch {
        try? await test.destroy()
        throw error
    }
    return test
}

/// Runs `body` with a fresh, migrated storage of `kind` and destroys it afterwards, whether `body` throws or not.
public func withStorage<T>(
    _ kind: StorageKind, _ body: (any LedgerStorage) async throws -> T
) async throws -> T {
    let test = try await makeStorage(kind)
    let result: T
    do {
        result = try await body(test.storage)
    } catch {
        try? await test.destroy()
        throw error
    }
    try await test.destroy()
    return result
}

private func randomHex() -> String {
    (0..<8).map { _ in UInt8.random(in: .min ... .max) }.hex
}

/// Statements that cannot run inside a transaction (CREATE and DROP DATABASE), on a connection of their own.
enum PostgresAdmin {
    static func run(_ sql: String, _ configuration: PostgresStorage.Configuration) async throws {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: PostgresConnection.Configuration(
                    host: configuration.host, port: configuration.port, username: configuration.username,
                    password: configuration.password, database: configuration.database, tls: .disable
                ),
                id: 0, logger: testLogger
            )
        } catch {
            throw TestDatabaseError(description: """
                PostgreSQL is not reachable at \(configuration.host):\(configuration.port) as \(configuration.username) \
                (database \(configuration.database)): \(String(reflecting: error)). Start it with `sudo scripts/postgres.sh` \
                or point BLEPAY_TEST_POSTGRES_URL at a server whose role may CREATEDB.
                """)
        }
        do {
            for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: testLogger) {}
        } catch {
            try? await connection.close()
            throw TestDatabaseError(description: "PostgreSQL refused `\(sql)`: \(String(reflecting: error))")
        }
        try await connection.close()
    }

    /// Drops a test's database. FORCE ends the test's own sessions, but not an autovacuum worker that happens to be
    /// in it (the server's, not ours: 42501): that one is gone within moments, so the drop is tried again.
    static func drop(_ name: String, _ configuration: PostgresStorage.Configuration) async throws {
        var attempts = 1
        while true {
            do {
                return try await run("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", configuration)
            } catch where attempts < 20 && "\(error)".contains("sqlState: 42501") {
                attempts += 1
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}
