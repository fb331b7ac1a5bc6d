import Logging
import NIOCore
import PostgresNIO

/// One PostgreSQL transaction's statements, run synchronously on the storage's thread pool. Statements are queued
/// as the body gives them and sent when an answer is read: reading one sends every statement queued, in order, in
/// one hop to the connection's event loop, and waits once for all their answers, however many were queued. The
/// connection still exchanges each statement with the server on its own: postgres-nio sends a statement once the
/// one before it is answered. So writes queued one after another that cannot depend on one another go as one
/// statement (`MergedWrites`). Plain SELECTs, INSERTs, UPDATEs and DELETEs are prepared on the connection the first
/// time they run there (`PreparedStatements`). Never used on an event loop thread.
final class PostgresTransaction: SQLTransaction {
    let connection: PostgresConnection
    let logger: Logger
    var dialect: SQLDialect { .postgres }

    /// Failures whose SQLSTATE asks for the whole transaction to be tried again, by the error the body saw.
    private(set) var retryableFailures: [StorageError: String] = [:]
    /// Set when the connection itself failed: it is closed and must not be used again.
    private(set) var connectionFailed = false
    /// How many statements the database answered without an error.
    private(set) var confirmed = 0
    /// How many times the transaction waited for the database.
    private(set) var waits = 0
    /// How many statements it sent, writes merged counted once.
    private(set) var statements = 0
    /// Queued and not yet sent: the statement, the promise of its answer, and what it is if it may be merged.
    private var unsent: [Queued] = []
    /// Sent or queued, and not yet confirmed.
    private var unconfirmed: [(sql: String, answer: EventLoopFuture<Answer>)] = []
    /// Runs each batch on the connection's event loop.
    private let loop: LoopExecutor
    /// Savepoints opened and not yet ended; those among them not set in the database yet (see `savepoint`).
    private var open = 0
    private var pending: [String] = []
    /// Set and never released, in order.
    private var unreleased: [String] = []
    private var nextSavepoint = 0
    /// The writes `runLast` put off, made by `finish`.
    private var last: [(sql: String, binds: [SQLValue])] = []

    /// SQLSTATEs after which running the same transaction again can succeed: serialization_failure,
    /// deadlock_detected, and unique_violation (two transactions inserting the same new row at once).
    static let retryableStates: Set<String> = ["40001", "40P01", "23505"]

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
        loop = LoopExecutor(connection.eventLoop)
    }

    /// A statement as it is sent: prepared, or as it is (commands, and what `PreparedStatements` does not prepare).
    enum Statement: Sendable {
        case prepared(PreparedStatements.Statement)
        case unprepared(PostgresQuery)
    }

    struct Queued: Sendable {
        let statement: Statement
        let answer: EventLoopPromise<Answer>
        let write: MergedWrites.Write?
    }

    /// What the database answered a statement, and its command tag when it ran unprepared.
    struct Answer: Sendable {
        var result: SQLResult
        var command: String?
    }

    /// What is still queued when the transaction ends was never sent (its connection failed first).
    deinit {
        for statement in unsent { statement.answer.fail(StorageError(.unavailable, "the PostgreSQL connection failed")) }
    }

    @discardableResult
    func send(_ sql: String, _ binds: [SQLValue]) throws -> Pending<SQLResult> {
        setPendingSavepoints(before: sql)
        let answer = query(sql, binds)
        return Pending { [self] () throws -> SQLResult in
            try confirmSent()
            return try wait(for: answer, of: sql).result
        }
    }

    func runLast(_ sql: String, _ binds: [SQLValue]) {
        last.append((sql, binds))
    }

    /// Sends the writes put off by `runLast`; the transaction commits next.
    func finish() throws {
        for (sql, binds) in last { try send(sql, binds) }
        last = []
    }

    /// A savepoint costs a statement, so it is set only before the first statement in it that may change something
    /// (a refusal after reads alone has nothing to undo; a failed read fails the whole transaction anyway), and never
    /// released: COMMIT ends it with the rest. Savepoints left behind nest (each in the one before), so once
    /// `unreleasedLimit` pile up outside any open savepoint they are released together, with the oldest.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        nextSavepoint += 1
        let name = "sp_\(nextSavepoint)"
        pending.append(name)
        open += 1
        defer { open -= 1 }
        let queued = last.count
        let value: T
        do {
            value = try body()
        } catch {
            last.removeSubrange(queued...)
            if pending.last == name {
                pending.removeLast()
            } else {
                send("ROLLBACK TO SAVEPOINT \(name)")
            }
            throw error
        }
        if pending.last == name { pending.removeLast() }
        if open == 1, let oldest = unreleased.first, unreleased.count >= Self.unreleasedLimit {
            send("RELEASE SAVEPOINT \(oldest)")
            unreleased = []
        }
        return value
    }

    static let unreleasedLimit = 32

    /// Sets the savepoints opened but not set yet, unless `sql` only reads.
    private func setPendingSavepoints(before sql: String) {
        guard !pending.isEmpty, !Self.onlyReads(sql) else { return }
        for name in pending {
            send("SAVEPOINT \(name)")
            unreleased.append(name)
        }
        pending = []
    }

    /// A plain SELECT (with or without FOR UPDATE) changes no row.
    static func onlyReads(_ sql: String) -> Bool {
        sql.drop { $0 == " " || $0 == "\n" }.prefix(7).uppercased() == "SELECT "
    }

    /// Queues a statement without binds whose answer nothing reads (BEGIN, SAVEPOINT, ROLLBACK TO).
    func send(_ sql: String) {
        _ = queue(sql, .unprepared(PostgresQuery(unsafeSQL: sql, binds: PostgresBindings())))
    }

    /// Queues one statement; its answer is confirmed with the next wait.
    private func query(_ sql: String, _ binds: [SQLValue]) -> EventLoopFuture<Answer> {
        let statement = Self.statement(sql, binds)
        guard case .prepared(let prepared) = statement, let table = prepared.number.mergesInto else {
            return queue(sql, statement)
        }
        return queue(sql, statement, write: MergedWrites.Write(sql: sql, binds: binds, table: table))
    }

    /// `sql` bound to `binds`, prepared if it can be.
    private static func statement(_ sql: String, _ binds: [SQLValue]) -> Statement {
        var bindings = PostgresBindings(capacity: binds.count)
        for bind in binds {
            switch bind {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let value): bindings.append(ByteBuffer(bytes: value))
            }
        }
        return PreparedStatements.statement(sql, binds, bindings).map(Statement.prepared)
            ?? .unprepared(PostgresQuery(unsafeSQL: Self.numberedPlaceholders(sql), binds: bindings))
    }

    private func queue(_ sql: String, _ statement: Statement, write: MergedWrites.Write? = nil) -> EventLoopFuture<Answer> {
        let answer = connection.eventLoop.makePromise(of: Answer.self)
        unsent.append(Queued(statement: statement, answer: answer, write: write))
        unconfirmed.append((sql, answer.futureResult))
        return answer.futureResult
    }

    /// The batch to send: each group of writes that may go together as one statement, whose answer gives each write
    /// its count (or its failure).
    private func merged(_ batch: [Queued]) -> [Queued] {
        MergedWrites.groups(batch, write: \.write).map { group in
            guard group.count > 1 else { return group[0] }
            let (sql, binds) = MergedWrites.statement(group.compactMap(\.write))
            let answer = connection.eventLoop.makePromise(of: Answer.self)
            answer.futureResult.whenComplete { result in
                switch result {
                case .success(let answer):
                    let counts = answer.result.rows.first?.values ?? []
                    for (index, write) in group.enumerated() {
                        guard index < counts.count, case .integer(let count) = counts[index] else {
                            write.answer.fail(StorageError(.corrupt, "merged writes answered \(counts)"))
                            continue
                        }
                        write.answer.succeed(Answer(result: SQLResult(rows: [], changed: Int(count))))
                    }
                case .failure(let error):
                    for write in group { write.answer.fail(error) }
                }
            }
            return Queued(statement: Self.statement(sql, binds), answer: answer, write: nil)
        }
    }

    /// Sends what is queued and waits once for every statement not yet confirmed, throwing the first failure.
    private func confirmSent() throws(StorageError) {
        guard !unconfirmed.isEmpty else { return }
        waits += 1
        let batch = merged(unsent)
        statements += batch.count
        Self.send(batch, on: connection, loop: loop, logger: logger)
        unsent = []
        let sent = unconfirmed
        unconfirmed = []
        // One wake-up for all the answers; each is then read in order, so the first failure is the one thrown.
        _ = try? EventLoopFuture.andAllComplete(sent.map(\.answer), on: connection.eventLoop).wait()
        for statement in sent { try wait(for: statement.answer, of: statement.sql) }
    }

    /// One task for the batch, on the connection's event loop: each statement is written when the one before it is
    /// answered (as postgres-nio would send them anyway), and checked against a closed connection in the same turn of
    /// the loop that writes it, since a statement written to a closed connection is never answered.
    private static func send(_ batch: [Queued], on connection: PostgresConnection, loop: LoopExecutor, logger: Logger) {
        Task(executorPreference: loop) {
            for queued in batch {
                guard !connection.isClosed else {
                    queued.answer.fail(StorageError(.unavailable, "the connection is closed"))
                    continue
                }
                do {
                    queued.answer.succeed(try await run(queued.statement, on: connection, logger: logger))
                } catch {
                    queued.answer.fail(error)
                }
            }
        }
    }

    private static func run(_ statement: Statement, on connection: PostgresConnection, logger: Logger) async throws
        -> Answer
    {
        switch statement {
        case .prepared(let prepared):
            return Answer(result: try await prepared.run(on: connection, logger: logger))
        case .unprepared(let query):
            let result = try await connection.query(query, logger: logger).get()
            let rows = try result.rows.map(Self.row)
            return Answer(result: SQLResult(rows: rows, changed: result.metadata.rows ?? 0), command: result.metadata.command)
        }
    }

    /// Runs one statement and waits for it (and for the statements sent before it).
    @discardableResult
    func execute(_ sql: String, _ binds: [SQLValue]) throws(StorageError) -> Answer {
        let answer = query(sql, binds)
        try confirmSent()
        return try wait(for: answer, of: sql)
    }

    /// A statement's answer. A failure is thrown as `StorageError(.unavailable)`; if the database asked for a retry,
    /// the error is remembered so the storage can tell it escaped the body.
    @discardableResult
    private func wait(for answer: EventLoopFuture<Answer>, of sql: String) throws(StorageError) -> Answer {
        do {
            let result = try answer.wait()
            confirmed += 1
            return result
        } catch let error as PSQLError where error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? "?????"
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            let failure = StorageError(.unavailable, "\(message) (SQLSTATE \(state)) while executing `\(sql)`")
            if Self.retryableStates.contains(state) { retryableFailures[failure] = state }
            logger.debug("statement failed", metadata: ["sqlstate": "\(state)", "error": "\(message)"])
            throw failure
        } catch {
            connectionFailed = true
            throw StorageError(.unavailable, "the PostgreSQL connection failed: \(PostgresConnectionPool.describe(error))")
        }
    }

    /// `sql` with its `?` placeholders numbered `$1, $2, …`; a `?` inside a quoted string or identifier stays. Scans
    /// UTF-8 bytes (every character it looks for is ASCII): each statement passes through here, and walking it
    /// character by character cost 6 % of the ledger's CPU on PostgreSQL.
    static func numberedPlaceholders(_ sql: String) -> String {
        let utf8 = sql.utf8
        guard utf8.contains(UInt8(ascii: "?")) else { return sql }
        var result: [UInt8] = []
        result.reserveCapacity(utf8.count + 16)
        var quote: UInt8?
        var number = 0
        for byte in utf8 {
            if let open = quote {
                if byte == open { quote = nil }
                result.append(byte)
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
                result.append(byte)
            } else if byte == UInt8(ascii: "?") {
                number += 1
                result.append(UInt8(ascii: "$"))
                result.append(contentsOf: String(number).utf8)
            } else {
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// A row as its cells' values, prepared or not.
    static func row(_ row: PostgresRow) throws -> SQLRow {
        SQLRow(try PostgresRandomAccessRow(row).map(value))
    }

    /// A cell as the value it was written as: 64-bit (or smaller) integers, text, bytes, or NULL. Integral
    /// `numeric`s (what `SUM` of a BIGINT column gives) are integers as well; `void` is NULL.
    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard var bytes = cell.bytes else { return .null }
        let value: SQLValue?
        switch cell.dataType {
        case .int8: value = bytes.readInteger(as: Int64.self).map { .integer($0) }
        case .int4: value = bytes.readInteger(as: Int32.self).map { .integer(Int64($0)) }
        case .int2: value = bytes.readInteger(as: Int16.self).map { .integer(Int64($0)) }
        case .text, .varchar, .name, .bpchar: value = .text(String(decoding: bytes.readableBytesView, as: UTF8.self))
        case .bytea: value = .blob(Array(bytes.readableBytesView))
        case .numeric: value = integralNumeric(&bytes).map { .integer($0) }
        case .void: value = .null  // what a function called for its effect returns (pg_advisory_xact_lock)
        default: value = nil
        }
        guard let value else {
            throw StorageError(.corrupt, "column \(cell.columnIndex) (\(cell.columnName)) holds \(cell.dataType) \(bytes.readableBytes) bytes")
        }
        return value
    }

    /// A binary `numeric` (digits in base 10000 after a header) as an Int64, or nil if it is not a whole number
    /// or does not fit.
    static func integralNumeric(_ buffer: inout ByteBuffer) -> Int64? {
        guard let count = buffer.readInteger(as: Int16.self), let weight = buffer.readInteger(as: Int16.self),
            let sign = buffer.readInteger(as: UInt16.self), buffer.readInteger(as: Int16.self) != nil,
            sign == 0x0000 || sign == 0x4000, count >= 0
        else { return nil }
        var result: Int64 = 0
        for index in 0..<Int(count) {
            guard let digit = buffer.readInteger(as: Int16.self) else { return nil }
            if Int(weight) - index < 0 {
                guard digit == 0 else { return nil }
                continue
            }
            // Accumulated with the sign applied, so Int64.min fits.
            let (shifted, overflow) = result.multipliedReportingOverflow(by: 10_000)
            let (next, overflow2) = shifted.addingReportingOverflow(sign == 0 ? Int64(digit) : -Int64(digit))
            guard !overflow, !overflow2 else { return nil }
            result = next
        }
        // Trailing digit groups that are zero are not sent: scale up by what is missing.
        let missing = Int(weight) + 1 - Int(count)
        if missing > 0 {
            for _ in 0..<missing {
                let (next, overflow) = result.multipliedReportingOverflow(by: 10_000)
                guard !overflow else { return nil }
                result = next
            }
        }
        return result
    }
}
