import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// Statements sent together and read later (`SQLTransaction.send`): on PostgreSQL the transaction's thread waits
/// once for all of them; SQLite runs each at once. What a transaction reads and keeps is the same on both.
extension StorageTests {
    @Test(arguments: StorageKind.allCases)
    func sentStatementsAnswerEachForItselfInWhateverOrderTheyAreRead(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            let (inserted, second, first, counted) = try await storage.write { tx in
                let inserted = try tx.send("INSERT INTO items (id, i) VALUES (?, ?), (?, ?)",
                    [.integer(1), .integer(10), .integer(2), .integer(20)])
                let first = try tx.send("SELECT i FROM items WHERE id = ?", [.integer(1)])
                try tx.send("UPDATE items SET i = i + 1 WHERE id = ?", [.integer(2)])
                let second = try tx.send("SELECT i FROM items WHERE id = ?", [.integer(2)])
                let counted = try tx.send("SELECT COUNT(*) FROM items", [])
                return (try inserted.changed(), try second.row()?.integer(0), try first.row()?.integer(0),
                    try counted.row()?.integer(0))
            }
            #expect(inserted == 2 && first == 10 && second == 21 && counted == 2)
            #expect(try await ids(storage) == [1, 2])
        }
    }

    /// A write whose answer nothing reads still fails its transaction: nothing of it is kept.
    @Test(arguments: StorageKind.allCases)
    func aSentWriteThatFailsFailsItsTransaction(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(1)]) }
            await #expect(throws: StorageError.self) {
                try await storage.write { tx in
                    try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(2)])
                    try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(1)])  // taken
                    try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(3)])
                }
            }
            #expect(try await ids(storage) == [1])
        }
    }

    /// Reading any answer confirms what was sent before it: one wait for a batch of reads, one for the writes and
    /// the commit.
    @Test func statementsSentTogetherCostOneWait() async throws {
        try await withStorage(.postgres) { storage in
            let postgres = try #require(storage as? PostgresStorage)
            try await createItems(storage)
            let before = postgres.waits
            let sum = try await storage.write { tx in
                let reads = try (1...5).map { id in try tx.send("SELECT COUNT(*) FROM items WHERE id = ?", [.integer(id)]) }
                let sum = try reads.reduce(0) { sum, read in try sum + (read.row()?.integer(0) ?? 0) }
                for id in 1...5 { try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(Int64(id))]) }
                return sum
            }
            #expect(sum == 0)
            #expect(postgres.waits - before == 2)
            #expect(try await ids(storage) == [1, 2, 3, 4, 5])
        }
    }

    /// The database ends the connection in the middle of a transaction (statements sent, a savepoint open): the
    /// transaction fails as unavailable, nothing of it is kept, and the next one runs on a new connection.
    @Test(.timeLimit(.minutes(1))) func aConnectionLostInATransactionFailsItAndTheNextRunsOnAnother() async throws {
        try await withStorage(.postgres) { storage in
            try await createItems(storage)
            await #expect(throws: StorageError.self) {
                try await storage.write { tx in
                    try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(1)])
                    try tx.savepoint { () throws -> Void in
                        try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(2)])
                        _ = try tx.rows("SELECT pg_terminate_backend(pg_backend_pid())", [])
                    }
                }
            }
            #expect(try await ids(storage) == [])
            _ = try await storage.write { tx in try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(3)]) }
            #expect(try await ids(storage) == [3])
        }
    }
}
