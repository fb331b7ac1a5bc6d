import BlepayLedger
@testable import BlepayLedgerStore
import BlepayProtocol
import Dispatch
import LedgerTestSupport
import Synchronization
import Testing

/// The storage contract, proved on both databases: what the ledger's operations rely on.
@Suite struct StorageTests {
    struct Boom: Error, Equatable {
        let id: Int
    }

    /// Counts how often a transaction body ran (it may run again when the database asks for a retry).
    final class Runs: Sendable {
        private let count = Mutex(0)
        func next() -> Int { count.withLock { $0 += 1; return $0 } }
        var value: Int { count.withLock { $0 } }
    }

    /// Holds the first `parties` callers of `arrive()` until all of them have come (for at most 10 s); later
    /// callers pass straight through.
    final class Rendezvous: Sendable {
        private let parties: Int
        private let arrived = Mutex(0)
        private let gate = DispatchSemaphore(value: 0)

        init(parties: Int) { self.parties = parties }

        /// Waits (at most 10 s) for every party; false if they did not all come.
        @discardableResult
        func arrive() -> Bool {
            let count = arrived.withLock { $0 += 1; return $0 }
            if count == parties {
                for _ in 1..<parties { gate.signal() }
                return true
            }
            return count < parties && gate.wait(timeout: .now() + 10) == .success
        }
    }

    /// Creates a scratch table, spelled for the storage's database.
    func create(_ storage: any LedgerStorage, _ sql: String) async throws {
        let statements = Schema.statements(sql, for: storage.dialect)
        try await storage.write { tx in for statement in statements { try tx.run(statement, []) } }
    }

    func createItems(_ storage: any LedgerStorage) async throws {
        try await create(storage, "CREATE TABLE items (id INTEGER PRIMARY KEY, i INTEGER, s TEXT, b BLOB)")
    }

    func ids(_ storage: any LedgerStorage) async throws -> [Int64] {
        try await storage.read { tx in try tx.rows("SELECT id FROM items ORDER BY id", []).map { try $0.integer(0) } }
    }

    @Test(arguments: StorageKind.allCases)
    func migrationIsIdempotent(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await storage.migrate()
            try await storage.migrate()
            let versions = try await storage.read { tx in
                try tx.rows("SELECT version FROM schema_version ORDER BY version", []).map { try $0.integer(0) }
            }
            #expect(versions == (1...Schema.migrations.count).map { Int64($0) })
            // The schema is there and usable.
            let changed = try await storage.write { tx in
                try tx.run("INSERT INTO books (id, kind) VALUES (?, ?)", [.text("world"), .text("external")])
            }
            #expect(changed == 1)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func newerSchemaIsRefused(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            let newer = Int64(Schema.migrations.count + 1)
            _ = try await storage.write { tx in try tx.run("INSERT INTO schema_version (version) VALUES (?)", [.integer(newer)]) }
            let error = await #expect(throws: StorageError.self) { try await storage.migrate() }
            #expect(error?.code == .schemaTooNew)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func valuesRoundTripExactly(_ kind: StorageKind) async throws {
        let rows: [[SQLValue]] = [
            [.integer(1), .integer(.min), .text(""), .blob([])],
            [.integer(2), .integer(.max), .text("Grüße, 東京 🚲 'quoted' ?"), .blob([0x00, 0xFF, 0x00, 0x7F])],
            [.integer(3), .integer(0), .text("tab\tnewline\n"), .blob([0x00])],
            [.integer(4), .null, .null, .null],
            [.integer(5), .integer(-1), .text("x"), .blob(Array(0...255))],
        ]
        try await withStorage(kind) { storage in
            try await createItems(storage)
            try await storage.write { tx in
                for row in rows { try tx.run("INSERT INTO items (id, i, s, b) VALUES (?, ?, ?, ?)", row) }
            }
            let read = try await storage.read { tx in try tx.rows("SELECT id, i, s, b FROM items ORDER BY id", []) }
            #expect(read == rows.map(SQLRow.init))

            // Bound values come back as they went in, a `?` inside a string literal is not a placeholder, and
            // integer expressions (COUNT, SUM of BIGINTs, literals) read as integers.
            let selected = try await storage.read { tx in
                try tx.row(
                    "SELECT ?, 'a?b', ?, ?, ?, (SELECT COUNT(*) FROM items), 1",
                    [.integer(.min), .text("Ω?"), .blob([0, 1, 0]), .null]
                )
            }
            #expect(selected?.values == [.integer(.min), .text("a?b"), .text("Ω?"), .blob([0, 1, 0]), .null, .integer(5), .integer(1)])
            let sums = try await storage.write { tx in
                try tx.run("INSERT INTO items (id, i) VALUES (?, ?), (?, ?), (?, ?), (?, ?)", [
                    .integer(10), .integer(.max - 5), .integer(11), .integer(5),
                    .integer(20), .integer(.min + 10), .integer(21), .integer(-10),
                ])
                return try tx.rows("""
                    SELECT SUM(i) FROM items WHERE id IN (10, 11) UNION ALL
                    SELECT SUM(i) FROM items WHERE id IN (20, 21) UNION ALL
                    SELECT SUM(i) FROM items WHERE id IN (1000)
                    """, []).map { $0.values[0] }
            }
            #expect(sums == [.integer(.max), .integer(.min), .null])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func runReturnsTheChangedRowCount(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            let counts = try await storage.write { tx in
                [
                    try tx.run("INSERT INTO items (id, i) VALUES (?, ?), (?, ?), (?, ?)", [
                        .integer(1), .integer(10), .integer(2), .integer(20), .integer(3), .integer(30),
                    ]),
                    try tx.run("UPDATE items SET s = ? WHERE i >= ?", [.text("big"), .integer(20)]),
                    try tx.run("UPDATE items SET s = ? WHERE i > ?", [.text("none"), .integer(1000)]),
                    try tx.run(
                        "INSERT INTO items (id, i) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET i = excluded.i",
                        [.integer(1), .integer(11)]
                    ),
                    try tx.run("DELETE FROM items WHERE id = ?", [.integer(2)]),
                    try tx.run("DELETE FROM items", []),
                ]
            }
            #expect(counts == [3, 2, 0, 1, 1, 2])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aFailedWriteLeavesNothingAndRethrowsItsError(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            await #expect(throws: Boom(id: 7)) {
                try await storage.write { tx in
                    try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(1)])
                    try tx.run("UPDATE items SET s = ?", [.text("changed")])
                    throw Boom(id: 7)
                }
            }
            #expect(try await ids(storage) == [])
            // The storage goes on working after the rollback.
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(2)]) }
            #expect(try await ids(storage) == [2])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aFailedSavepointUndoesOnlyItsOwnStatements(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            let outcome = try await storage.write { tx in
                try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(1)])
                var thrown: [String] = []
                do {
                    try tx.savepoint {
                        try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(2)])
                        throw Boom(id: 2)
                    }
                } catch { thrown.append("\(error)") }
                // A statement the database refuses (a duplicate key) inside a savepoint: the transaction goes on.
                do {
                    _ = try tx.savepoint { try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(1)]) }
                } catch { thrown.append("duplicate") }
                // Nested: the inner one fails, the outer one keeps what it did.
                let kept = try tx.savepoint {
                    try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(3)])
                    do {
                        try tx.savepoint {
                            try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(4)])
                            throw Boom(id: 4)
                        }
                    } catch { thrown.append("\(error)") }
                    return try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(5)])
                }
                try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(6)])
                return (thrown, kept)
            }
            #expect(outcome.0 == ["\(Boom(id: 2))", "duplicate", "\(Boom(id: 4))"])
            #expect(outcome.1 == 1)
            #expect(try await ids(storage) == [1, 3, 5, 6])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func concurrentWritesLoseNoUpdate(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await create(storage, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            _ = try await storage.write { tx in try tx.run("INSERT INTO counters (id, n) VALUES (1, 0)", []) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await storage.write { tx in
                            let n = try tx.row("SELECT n FROM counters WHERE id = ?" + tx.dialect.forUpdate, [.integer(1)])!.integer(0)
                            try tx.run("UPDATE counters SET n = ? WHERE id = ?", [.integer(n + 1), .integer(1)])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let n = try await storage.read { tx in try tx.row("SELECT n FROM counters WHERE id = 1", [])!.integer(0) }
            #expect(n == 50)
        }
    }

    /// Many writers creating the same row when it is missing: on PostgreSQL the inserts collide on the primary
    /// key, and the losers' transactions are run again (finding the row now) instead of failing.
    @Test(arguments: StorageKind.allCases)
    func concurrentInsertsOfTheSameNewRowAllCount(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await create(storage, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            let runs = Runs()
            let rendezvous = Rendezvous(parties: 4)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await storage.write { tx in
                            _ = runs.next()
                            if let row = try tx.row("SELECT n FROM counters WHERE id = 7" + tx.dialect.forUpdate, []) {
                                try tx.run("UPDATE counters SET n = ? WHERE id = 7", [.integer(try row.integer(0) + 1)])
                            } else {
                                // PostgreSQL runs writers side by side: the first few all find the row missing
                                // before any of them inserts it. (SQLite runs them one at a time.)
                                if tx.dialect == .postgres { rendezvous.arrive() }
                                try tx.run("INSERT INTO counters (id, n) VALUES (7, 1)", [])
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let n = try await storage.read { tx in try tx.row("SELECT n FROM counters WHERE id = 7", [])?.integer(0) }
            #expect(n == 20)
            // SQLite runs writers one at a time; on PostgreSQL the colliding ones ran again.
            #expect(kind == .sqlite ? runs.value == 20 : runs.value > 20)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func readsSeeCommittedDataOnly(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id, s) VALUES (1, 'committed')", []) }
            #expect(try await ids(storage) == [1])

            // A write that has inserted but not committed yet is invisible to a read running meanwhile.
            let (inserted, insertedSignal) = AsyncStream<Void>.makeStream()
            let proceed = DispatchSemaphore(value: 0)
            let writer = Task {
                try await storage.write { tx in
                    try tx.run("INSERT INTO items (id) VALUES (2)", [])
                    insertedSignal.yield()
                    proceed.wait()
                }
            }
            var signals = inserted.makeAsyncIterator()
            _ = await signals.next()
            let during: [Int64]
            do { during = try await ids(storage) } catch {
                proceed.signal()
                throw error
            }
            proceed.signal()
            try await writer.value
            #expect(during == [1])
            #expect(try await ids(storage) == [1, 2])

            // A read changes nothing.
            let error = await #expect(throws: StorageError.self) {
                try await storage.read { tx in try tx.run("INSERT INTO items (id) VALUES (3)", []) }
            }
            #expect(error?.code == .unavailable)
            #expect(try await ids(storage) == [1, 2])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func writesPutLastAreMadeUnlessTheirSavepointIsUndone(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            struct Undo: Error {}
            try await storage.write { tx in
                try tx.runLast("INSERT INTO items (id, i) VALUES (?, ?)", [.integer(1), .integer(1)])
                _ = try? tx.savepoint { () throws -> Void in
                    try tx.runLast("INSERT INTO items (id, i) VALUES (?, ?)", [.integer(2), .integer(2)])
                    throw Undo()
                }
                try tx.savepoint { try tx.runLast("INSERT INTO items (id, i) VALUES (?, ?)", [.integer(3), .integer(3)]) }
            }
            let ids = try await storage.read { tx in try tx.rows("SELECT id FROM items ORDER BY id", []).map { try $0.integer(0) } }
            #expect(ids == [1, 3])
        }
    }
}

/// What only PostgreSQL does: placeholders, retries, connections.
@Suite struct PostgresStorageTests {
    @Test func placeholdersAreNumberedOutsideQuotes() {
        #expect(PostgresTransaction.numberedPlaceholders("SELECT 1") == "SELECT 1")
        #expect(
            PostgresTransaction.numberedPlaceholders(#"SELECT ?, '?', 'it''s ?', "a?b", ? FROM t WHERE x = ?"#)
                == #"SELECT $1, '?', 'it''s ?', "a?b", $2 FROM t WHERE x = $3"#
        )
        // Text beyond ASCII passes through whole, and placeholders after it are still found.
        #expect(PostgresTransaction.numberedPlaceholders("SELECT 'café ?', ? -- naïve ü") == "SELECT 'café ?', $1 -- naïve ü")
        let many = "VALUES (" + Array(repeating: "?", count: 12).joined(separator: ", ") + ")"
        #expect(PostgresTransaction.numberedPlaceholders(many) == "VALUES (" + (1...12).map { "$\($0)" }.joined(separator: ", ") + ")")
    }

    @Test func configurationParsesURLs() throws {
        let configuration = try PostgresStorage.Configuration(url: "postgres://ledger:p%40ss@db.example:6543/books")
        #expect(configuration == PostgresStorage.Configuration(
            host: "db.example", port: 6543, username: "ledger", password: "p@ss", database: "books"
        ))
        let defaults = try PostgresStorage.Configuration(url: "postgresql://ledger@localhost", connections: 2)
        #expect(defaults == PostgresStorage.Configuration(
            host: "localhost", port: 5432, username: "ledger", password: "", database: "ledger", connections: 2
        ))
        #expect(throws: StorageError.self) { try PostgresStorage.Configuration(url: "mysql://ledger@localhost/books") }
    }

    @Test func anUnreachableServerIsUnavailable() async throws {
        let error = await #expect(throws: StorageError.self) {
            _ = try await PostgresStorage(
                configuration: .init(host: "127.0.0.1", port: 1, username: "blepay", password: "blepay", database: "blepay"),
                logger: testLogger
            )
        }
        #expect(error?.code == .unavailable)
    }

    @Test func aTransactionTheDatabaseRefusesOnceIsRunAgain() async throws {
        try await withStorage(.postgres) { storage in
            _ = try await storage.write { tx in try tx.run("CREATE TABLE items (id BIGINT PRIMARY KEY)", []) }
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id) VALUES (1)", []) }
            let runs = StorageTests.Runs()
            let result = try await storage.write { tx in
                let run = runs.next()
                try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(run == 1 ? 1 : 2)])  // the first collides
                return run
            }
            #expect(result == 2)
            let ids = try await storage.read { tx in try tx.rows("SELECT id FROM items ORDER BY id", []).map { try $0.integer(0) } }
            #expect(ids == [1, 2])
        }
    }

    @Test func aTransactionTheDatabaseKeepsRefusingIsAConflict() async throws {
        try await withStorage(.postgres) { storage in
            _ = try await storage.write { tx in try tx.run("CREATE TABLE items (id BIGINT PRIMARY KEY)", []) }
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id) VALUES (1)", []) }
            let runs = StorageTests.Runs()
            let error = await #expect(throws: StorageError.self) {
                try await storage.write { tx in
                    _ = runs.next()
                    try tx.run("INSERT INTO items (id) VALUES (1)", [])
                }
            }
            #expect(error?.code == .conflict)
            #expect(runs.value == PostgresStorage.attempts)
        }
    }

    @Test func aStatementFailureTheBodySwallowedIsNotCommitted() async throws {
        try await withStorage(.postgres) { storage in
            _ = try await storage.write { tx in try tx.run("CREATE TABLE items (id BIGINT PRIMARY KEY)", []) }
            let error = await #expect(throws: StorageError.self) {
                try await storage.write { tx in
                    try tx.run("INSERT INTO items (id) VALUES (5)", [])
                    _ = try? tx.run("SELECT no_such_column FROM items", [])
                }
            }
            #expect(error?.code == .unavailable)
            let count = try await storage.read { tx in try tx.row("SELECT COUNT(*) FROM items", [])?.integer(0) }
            #expect(count == 0)
        }
    }

    /// Two processes crediting a balance that has no row yet: neither can lock it, both read it as empty, and
    /// both credits must still count.
    @Test func concurrentFirstCreditsToABalanceBothCount() async throws {
        try await withStorage(.postgres) { storage in
            let world = AccountID("external:deposits"), card = AccountID("instrument:card")
            let amount = try Money(minorUnits: 100, currency: Currency("EUR"))
            let loaded = StorageTests.Rendezvous(parties: 2)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<2 {
                    group.addTask {
                        try await storage.write { tx in
                            var journal = try Books.load(tx, books: [world, card])
                            loaded.arrive()
                            journal.open(world, kind: .external)
                            journal.open(card, kind: .customer)
                            try journal.transfer(id: "deposit-\(index)", from: world, to: card, amount: amount)
                            try Books.save(tx, journal, at: Timestamp(millisecondsSince1970: 1))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let (books, posted) = try await storage.read { tx in
                (try Books.loadAll(tx), try tx.row("SELECT posted FROM balances WHERE book = ?", [.text(card.rawValue)])?.integer(0))
            }
            #expect(posted == 200)
            #expect(books.audit() == [])
        }
    }

    /// Only the books an operation takes money from are locked, and a busy merchant's balance is written last: two
    /// customers paying one merchant both load and save their books at once (neither waits for the other's
    /// commit), and both credits count.
    @Test func paymentsToOneMerchantDoNotQueueOnItsBalance() async throws {
        try await withStorage(.postgres) { storage in
            let world = AccountID("external:deposits"), shop = AccountID("merchant:shop")
            let cards = [AccountID("instrument:a"), AccountID("instrument:b")]
            let amount = try Money(minorUnits: 100, currency: Currency("EUR"))
            let at = Timestamp(millisecondsSince1970: 1)
            try await storage.write { tx in
                var journal = try Books.load(tx, books: [world], credited: cards + [shop])
                journal.open(world, kind: .external)
                journal.open(shop, kind: .merchant)
                for card in cards + [shop] {
                    journal.open(card, kind: card == shop ? .merchant : .customer)
                    try journal.transfer(id: "fund-\(card.rawValue)", from: world, to: card, amount: amount)
                }
                try Books.save(tx, journal, at: at)
            }
            let saved = StorageTests.Rendezvous(parties: 2)
            let together = try await withThrowingTaskGroup(of: Bool.self) { group in
                for card in cards {
                    group.addTask {
                        try await storage.write { tx in
                            var journal = try Books.load(tx, books: [card], credited: [shop])
                            try journal.transfer(id: "pay-\(card.rawValue)", from: card, to: shop, amount: amount)
                            try Books.save(tx, journal, at: at, last: [shop])
                            return saved.arrive()
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let (books, posted) = try await storage.read { tx in
                (try Books.loadAll(tx), try tx.row("SELECT posted FROM balances WHERE book = ?", [.text(shop.rawValue)])?.integer(0))
            }
            #expect(together == [true, true])
            #expect(posted == 300)
            #expect(books.audit() == [])
        }
    }

    @Test func ledgerProcessesStartingTogetherMigrateOnce() async throws {
        try await withStorage(.postgres) { storage in
            let configuration = try #require(storage as? PostgresStorage).configuration
            _ = try await storage.write { tx in
                try tx.run("DROP SCHEMA public CASCADE", [])
                try tx.run("CREATE SCHEMA public", [])
            }
            let versions = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        let process = try await PostgresStorage(configuration: configuration, logger: testLogger)
                        do {
                            try await process.migrate()
                            let versions = try await process.read { tx in
                                try tx.rows("SELECT version FROM schema_version ORDER BY version", []).map { try $0.integer(0) }
                            }
                            try await process.close()
                            return versions
                        } catch {
                            try? await process.close()
                            throw error
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let all = (1...Schema.migrations.count).map { Int64($0) }
            #expect(versions == Array(repeating: all, count: 4))
        }
    }

    @Test func aClosedStorageRefusesTransactions() async throws {
        let test = try await makeStorage(.postgres)
        let storage = test.storage
        try await storage.close()
        let error = await #expect(throws: StorageError.self) {
            try await storage.read { tx in try tx.rows("SELECT 1", []) }
        }
        try await test.destroy()  // closing again is harmless
        #expect(error?.code == .unavailable)
    }
}
