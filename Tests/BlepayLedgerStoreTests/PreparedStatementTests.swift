@testable import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// On PostgreSQL plain SELECTs, INSERTs, UPDATEs and DELETEs are prepared once a connection, then only bound and
/// run (`PreparedStatements`); what they answer, rows, counts and failures, is what they answered unprepared.
extension StorageTests {
    @Test func whatIsPreparedAndAsWhat() {
        #expect(PreparedStatements.prepared("SELECT i FROM items WHERE id = ?") == "SELECT i FROM items WHERE id = ?")
        // A write returns a row for each row it changes: its count.
        #expect(PreparedStatements.prepared("\n  UPDATE items SET i = ? WHERE id = ?")
            == "\n  UPDATE items SET i = ? WHERE id = ? RETURNING 1")
        #expect(PreparedStatements.prepared("INSERT INTO items (id) VALUES (?) RETURNING id") == nil)
        #expect(PreparedStatements.prepared("delete from items where id = ? returning id") == nil)
        #expect(PreparedStatements.prepared("DELETE FROM items; DELETE FROM other") == nil)
        for command in ["BEGIN", "SAVEPOINT sp_1", "COMMIT", "CREATE TABLE t (id INTEGER)"] {
            #expect(PreparedStatements.prepared(command) == nil)
        }
    }

    @Test func statementsArePreparedOnceAConnectionAndAnswerAsUnprepared() async throws {
        try await withStorage(.postgres) { storage in
            try await createItems(storage)
            let counts = try await storage.write { tx in
                [
                    try tx.run("INSERT INTO items (id, i) VALUES (?, ?), (?, ?), (?, ?)",
                        [.integer(1), .integer(10), .integer(2), .integer(20), .integer(3), .integer(30)]),
                    try tx.run(
                        "INSERT INTO items (id, i) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", [.integer(1), .integer(5)]),
                    try tx.run("UPDATE items SET i = i + 1 WHERE i >= ?", [.integer(20)]),
                    try tx.run("DELETE FROM items WHERE id = ?", [.integer(9)]),
                    // The same text bound to NULL, then to text: prepared once for each.
                    try tx.run("UPDATE items SET s = ? WHERE id = ?", [.null, .integer(1)]),
                    try tx.run("UPDATE items SET s = ? WHERE id = ?", [.text("b"), .integer(2)]),
                ]
            }
            #expect(counts == [3, 0, 2, 0, 1, 1])
            let (values, prepared) = try await storage.write { tx in
                let select = "SELECT id, i, s FROM items WHERE id >= ? ORDER BY id"
                _ = try tx.rows(select, [.integer(1)])
                let values = try tx.rows(select, [.integer(1)]).map { $0.values }
                let prepared = try tx.rows(
                    "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'blepay\\_%'", []
                ).map { try $0.text(0) }
                return (values, prepared)
            }
            #expect(values == [
                [.integer(1), .integer(10), .null], [.integer(2), .integer(21), .text("b")],
                [.integer(3), .integer(31), .null],
            ])
            // Run twice on this connection, prepared once.
            #expect(prepared.filter { $0 == "SELECT id, i, s FROM items WHERE id >= $1 ORDER BY id" }.count == 1)
            #expect(prepared.contains("UPDATE items SET i = i + 1 WHERE i >= $1 RETURNING 1"))
            // A write that changes many rows is counted like one that changes one.
            #expect(try await storage.write { tx in try tx.run("DELETE FROM items WHERE i >= ?", [.integer(21)]) } == 2)
            #expect(try await ids(storage) == [1])
        }
    }
}
