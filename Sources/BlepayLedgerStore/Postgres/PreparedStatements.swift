import Logging
import PostgresNIO
import Synchronization

/// The statements PostgreSQL parses and plans once per connection instead of at every execution: parsing and
/// planning took more of the database's CPU than running the statements (docs/benchmarks.md). postgres-nio prepares
/// a statement by its type (`PostgresPreparedStatement`: a static name and SQL, prepared on a connection the first
/// time it runs there), so each distinct text, with the kinds of values it is bound to, is given a number once for
/// the process, and each number a type of its own (`StatementNumber`).
enum PreparedStatements {
    /// Beyond this many distinct statements, new ones run unprepared: SQL made at run time cannot grow the registry,
    /// nor each connection's plans, without bound.
    static let limit = 1_024

    /// Each statement's number and type by its text and bind kinds (nil for one that is not prepared); each number's
    /// text, placeholders numbered.
    private static let registry = Mutex<(entries: [String: Statement.Number?], texts: [String])>(([:], []))

    /// The statement to run `sql` bound to `binds` as, or nil if it runs unprepared: it is not a plain SELECT,
    /// INSERT, UPDATE or DELETE (it returns rows from a write, or is a command), or the registry is full.
    static func statement(_ sql: String, _ binds: [SQLValue], _ bindings: PostgresBindings) -> Statement? {
        // The kinds of the values bound are part of the key: a statement is prepared with its parameters' types.
        var key = sql
        key.append("\0")
        for bind in binds {
            switch bind {
            case .null: key.append("n")
            case .integer: key.append("i")
            case .text: key.append("t")
            case .blob: key.append("b")
            }
        }
        let number = registry.withLock { registry -> Statement.Number? in
            if let entry = registry.entries[key] { return entry }
            guard registry.entries.count < limit else { return nil }
            guard let prepared = prepared(sql) else {
                registry.entries[key] = .some(nil)
                return nil
            }
            let number = Statement.Number(
                value: registry.texts.count, type: numberType(registry.texts.count), counts: prepared != sql,
                mergesInto: MergedWrites.table(of: sql))
            registry.texts.append(PostgresTransaction.numberedPlaceholders(prepared))
            registry.entries[key] = number
            return number
        }
        return number.map { Statement(number: $0, bindings: bindings) }
    }

    static func sql(_ number: Int) -> String { registry.withLock { $0.texts[number] } }

    /// `sql` as it is prepared, or nil if it is not: a SELECT (or a WITH, as merged writes are sent) as it is; an
    /// INSERT, UPDATE or DELETE returning a row for each row it changes, which is how its count is read (postgres-nio
    /// gives a prepared statement's command tag only through a call that traps when the statement fails).
    static func prepared(_ sql: String) -> String? {
        let head = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }.prefix(7)
        let word = String(decoding: head, as: UTF8.self).uppercased()
        if word == "SELECT " || word.hasPrefix("WITH ") { return sql }
        guard word == "INSERT " || word == "UPDATE " || word == "DELETE ",
            sql.uppercased().utf8.firstRange(of: "RETURNING".utf8) == nil, !sql.utf8.contains(UInt8(ascii: ";"))
        else { return nil }
        return sql + " RETURNING 1"
    }

    /// One execution of a numbered statement.
    struct Statement: Sendable {
        /// A statement's number, and the type made of it (looked up once: a generic type's metadata is found in the
        /// runtime's cache at each use).
        struct Number: Sendable {
            let value: Int
            fileprivate let type: any StatementNumber.Type
            /// A write's rows are only counted: a DELETE of old rows may return millions.
            let counts: Bool
            /// The table a counted write changes, if it may go out with other writes (`MergedWrites`).
            let mergesInto: String?
        }

        let number: Number
        let bindings: PostgresBindings

        /// Runs it on `connection` (which prepares it first if it has not yet) and gives its rows and the number of
        /// rows it returned or changed.
        func run(on connection: PostgresConnection, logger: Logger) async throws -> SQLResult {
            try await Self.run(self, as: number.type, on: connection, logger: logger)
        }

        private static func run<Number: StatementNumber>(
            _ statement: Statement, as _: Number.Type, on connection: PostgresConnection, logger: Logger
        ) async throws -> SQLResult {
            let answer = try await connection.execute(Numbered<Number>(bindings: statement.bindings), logger: logger)
            guard !statement.number.counts else {
                var changed = 0
                for try await _ in answer { changed += 1 }
                return SQLResult(rows: [], changed: changed)
            }
            var rows: [SQLRow] = []
            for try await row in answer { rows.append(row) }
            return SQLResult(rows: rows, changed: rows.count)
        }
    }

    /// The type of `number`, made of its binary digits.
    fileprivate static func numberType(_ number: Int) -> any StatementNumber.Type {
        guard number > 0 else { return Zero.self }
        let half = numberType(number / 2)
        return number % 2 == 0 ? twice(half) : twicePlusOne(half)
    }

    private static func twice<Half: StatementNumber>(_: Half.Type) -> any StatementNumber.Type {
        Twice<Half>.self
    }

    private static func twicePlusOne<Half: StatementNumber>(_: Half.Type) -> any StatementNumber.Type {
        TwicePlusOne<Half>.self
    }
}

/// A number as a type, in binary digits (`Zero`, `Twice<…>`, `TwicePlusOne<…>`), so that the same number is
/// always the same type and each type names one statement.
private protocol StatementNumber: SendableMetatype {
    static var value: Int { get }
}

private enum Zero: StatementNumber { static var value: Int { 0 } }
private enum Twice<Half: StatementNumber>: StatementNumber { static var value: Int { Half.value * 2 } }
private enum TwicePlusOne<Half: StatementNumber>: StatementNumber { static var value: Int { Half.value * 2 + 1 } }

/// The statement a number names.
private struct Numbered<Number: StatementNumber>: PostgresPreparedStatement {
    static var name: String { "blepay_\(Number.value)" }
    static var sql: String { PreparedStatements.sql(Number.value) }
    let bindings: PostgresBindings
    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> SQLRow { try PostgresTransaction.row(row) }
}
