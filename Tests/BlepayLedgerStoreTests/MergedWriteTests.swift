@testable import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// On PostgreSQL writes queued one after another go as one statement when none can depend on another
/// (`MergedWrites`): each answers its own count, and a failure of any fails the transaction as before.
extension StorageTests {
    @Test func whichWritesGoTogether() {
        #expect(MergedWrites.table(of: "INSERT INTO items (id) VALUES (?)") == "ITEMS")
        #expect(MergedWrites.table(of: "\n  update other SET i = ? WHERE id = ?") == "OTHER")
        #expect(MergedWrites.table(of: "DELETE FROM items WHERE id = ?") == "ITEMS")
        // A write that reads another table would not see what the others change.
        #expect(MergedWrites.table(of: "UPDATE items SET i = (SELECT i FROM other WHERE id = ?)") == nil)
        #expect(MergedWrites.table(of: "UPDATE items SET i = other.i\nFROM other WHERE other.id = items.id") == nil)
        #expect(MergedWrites.table(of: "DELETE FROM items USING other WHERE other.id = items.id") == nil)
        #expect(MergedWrites.table(of: "INSERT INTO items (id) VALUES (?) RETURNING id") == nil)
        #expect(MergedWrites.table(of: "DELETE FROM items; DELETE FROM other") == nil)
        for other in ["SELECT i FROM items", "SAVEPOINT sp_1", "COMMIT", "INSERT items VALUES (1)"] {
            #expect(MergedWrites.table(of: other) == nil)
        }

        // A table a run changes already, or anything but a write, starts a new group.
        let batch = ["INSERT INTO a (x) VALUES (1)", "UPDATE b SET x = 1", "INSERT INTO a (x) VALUES (2)", "SAVEPOINT s",
            "DELETE FROM c", "DELETE FROM d", "SELECT 1"]
        let write = { (sql: String) in MergedWrites.table(of: sql).map { MergedWrites.Write(sql: sql, binds: [], table: $0) } }
        let groups = MergedWrites.groups(batch, write: write)
        #expect(groups == [[batch[0], batch[1]], [batch[2]], [batch[3]], [batch[4], batch[5]], [batch[6]]])
        let many = (0..<10).map { "INSERT INTO t\($0) (x) VALUES (1)" }
        #expect(MergedWrites.groups(many, write: write).map(\.count) == [8, 2])

        let writes = [
            MergedWrites.Write(sql: "INSERT INTO a (x) VALUES (?)", binds: [.integer(1)], table: "A"),
            MergedWrites.Write(sql: "UPDATE b SET x = ? WHERE id = ?", binds: [.integer(2), .text("b")], table: "B"),
        ]
        let statement = MergedWrites.statement(writes)
        #expect(statement.sql == "WITH w0 AS (INSERT INTO a (x) VALUES (?) RETURNING 1), "
            + "w1 AS (UPDATE b SET x = ? WHERE id = ? RETURNING 1) SELECT (SELECT count(*) FROM w0), (SELECT count(*) FROM w1)")
        #expect(statement.binds == [.integer(1), .integer(2), .text("b")])
    }

    @Test(arguments: StorageKind.allCases)
    func writesSentTogetherAnswerEachItsOwnCount(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            try await create(storage, "CREATE TABLE other (id INTEGER PRIMARY KEY, i INTEGER)")
            try await create(storage, "CREATE TABLE third (id INTEGER PRIMARY KEY)")
            let before = (storage as? PostgresStorage)?.statements
            let counts = try await storage.write { tx in
                let inserted = try tx.send("INSERT INTO items (id, i) VALUES (?, ?), (?, ?)",
                    [.integer(1), .integer(10), .integer(2), .integer(20)])
                let other = try tx.send("INSERT INTO other (id, i) VALUES (?, ?)", [.integer(7), .integer(70)])
                let none = try tx.send("DELETE FROM third WHERE id = ?", [.integer(1)])
                return try (inserted.changed(), other.changed(), none.changed())
            }
            if let postgres = storage as? PostgresStorage, let before {
                // BEGIN, the three writes as one, COMMIT.
                #expect(postgres.statements - before == 3)
            }
            #expect(counts == (2, 1, 0))
            #expect(try await ids(storage) == [1, 2])
        }
    }

    /// A write that fails among writes sent as one fails its transaction: nothing of it, or of the others, is kept.
    @Test(arguments: StorageKind.allCases)
    func aMergedWriteThatFailsFailsItsTransaction(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            try await create(storage, "CREATE TABLE other (id INTEGER PRIMARY KEY, i INTEGER)")
            _ = try await storage.write { tx in try tx.run("INSERT INTO other (id) VALUES (?)", [.integer(1)]) }
            await #expect(throws: StorageError.self) {
                try await storage.write { tx in
                    try tx.send("INSERT INTO items (id) VALUES (?)", [.integer(5)])
                    try tx.send("INSERT INTO other (id) VALUES (?)", [.integer(1)])  // taken
                }
            }
            #expect(try await ids(storage) == [])
        }
    }
}
