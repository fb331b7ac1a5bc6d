/// A value bound to or read from SQL. Integers are 64-bit in both databases; there are no floats and no booleans
/// (0 and 1), so the two dialects read back exactly what was written.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// One result row, columns in the order the query selected them.
public struct SQLRow: Sendable, Hashable {
    public let values: [SQLValue]

    public init(_ values: [SQLValue]) { self.values = values }

    public func integer(_ column: Int) throws(StorageError) -> Int64 {
        guard case .integer(let value) = values[column] else { throw StorageError.corrupt(column: column, values[column]) }
        return value
    }

    public func text(_ column: Int) throws(StorageError) -> String {
        guard case .text(let value) = values[column] else { throw StorageError.corrupt(column: column, values[column]) }
        return value
    }

    public func blob(_ column: Int) throws(StorageError) -> [UInt8] {
        guard case .blob(let value) = values[column] else { throw StorageError.corrupt(column: column, values[column]) }
        return value
    }

    public func optionalText(_ column: Int) throws(StorageError) -> String? {
        values[column] == .null ? nil : try text(column)
    }

    public func optionalBlob(_ column: Int) throws(StorageError) -> [UInt8]? {
        values[column] == .null ? nil : try blob(column)
    }
}

public enum SQLDialect: Sendable, Hashable {
    case sqlite, postgres

    /// Appended to a SELECT that reads rows the transaction will change. SQLite's write transactions are
    /// exclusive already; PostgreSQL locks the rows so concurrent ledger processes serialize on them.
    public var forUpdate: String { self == .postgres ? " FOR UPDATE" : "" }
}

/// What a statement answered: its rows, and how many rows it changed.
public struct SQLResult: Sendable {
    public let rows: [SQLRow]
    public let changed: Int

    public init(rows: [SQLRow], changed: Int) {
        self.rows = rows
        self.changed = changed
    }
}

/// A value read from statements sent and not yet waited for (`SQLTransaction.send`). Getting it waits for every
/// statement sent so far and throws the first failure among them.
public struct Pending<Value> {
    private let wait: () throws -> Value

    public init(_ wait: @escaping () throws -> Value) { self.wait = wait }

    public func get() throws -> Value { try wait() }

    /// What the value becomes, read the same way.
    public func map<U>(_ transform: @escaping (Value) throws -> U) -> Pending<U> { Pending<U> { try transform(wait()) } }
}

extension Pending where Value == SQLResult {
    public func rows() throws -> [SQLRow] { try get().rows }
    public func row() throws -> SQLRow? { try get().rows.first }
    /// The number of rows the statement changed.
    public func changed() throws -> Int { try get().changed }
}

/// Statements inside one transaction. SQL is written with `?` placeholders; each dialect binds them its own way.
public protocol SQLTransaction {
    var dialect: SQLDialect { get }
    /// Sends a statement and returns its answer unread. PostgreSQL runs a connection's statements in order, so
    /// statements sent before any answer is read share one wait of the transaction's thread: an operation sends the
    /// reads that do not depend on one another, then reads them. A write whose answer nothing reads costs no wait of
    /// its own; its failure is thrown by the next answer read, or by the commit. SQLite runs the statement at once.
    @discardableResult
    func send(_ sql: String, _ binds: [SQLValue]) throws -> Pending<SQLResult>
    /// Runs `body` in a savepoint: if it throws, what it did is undone and the transaction goes on.
    func savepoint<T>(_ body: () throws -> T) throws -> T
    /// A write to make as late as the database allows: on PostgreSQL, just before the transaction commits (in the
    /// order given, and dropped if the savepoint it was given in is undone), so the row lock it takes on a row
    /// many transactions update (a merchant's balance) is held only while the transaction commits. SQLite's
    /// writers take turns and lock no rows, so there it runs at once. Nothing in the transaction reads it back.
    func runLast(_ sql: String, _ binds: [SQLValue]) throws
}

extension SQLTransaction {
    /// Runs a query and waits for its rows.
    public func rows(_ sql: String, _ binds: [SQLValue]) throws -> [SQLRow] { try send(sql, binds).rows() }

    public func row(_ sql: String, _ binds: [SQLValue]) throws -> SQLRow? { try rows(sql, binds).first }

    /// Runs a statement and waits for it; returns the number of rows changed.
    @discardableResult
    public func run(_ sql: String, _ binds: [SQLValue]) throws -> Int { try send(sql, binds).changed() }
}

extension LedgerStorage {
    /// Throws `storage.no-ledger` unless a ledger's schema is in the database; reads only, so that a command
    /// pointed at the wrong database or directory leaves it as it was.
    public func requireLedger() async throws {
        let present = try await read { tx in
            let sql = switch tx.dialect {
            case .sqlite: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            case .postgres: "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_version'"
            }
            return try tx.row(sql, []) != nil
        }
        guard present else { throw StorageError(.noLedger, "the database holds no ledger") }
    }
}

/// A database the ledger keeps its books in.
public protocol LedgerStorage: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` in one read-write transaction: committed durably before this returns, or rolled back whole if
    /// `body` throws (its error is rethrown). Bodies may run more than once when the database asks for a retry
    /// (a serialization conflict), so they must do nothing but SQL.
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T
    /// Runs `body` on a consistent snapshot, without changing anything.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T
    /// Creates or upgrades the schema.
    func migrate() async throws
    func close() async throws
}
