@testable import BlepayDaemonStore
import Foundation
import GRDB
import Testing

/// Opening and migrating the state file: a file that cannot be used is refused and left exactly as it was.
@Suite struct DaemonStoreTests {
    /// GRDB sets `synchronous = NORMAL` when it turns WAL on, after the connection's own setup: a commit would then
    /// survive the daemon's crash but not the machine's, and an acceptance the customer was answered for could be lost.
    @Test func aCommitIsSyncedToDisk() throws {
        let store = try DaemonStore(path: try WalletFixture().path)
        let synchronous = try store.write(failing: { DaemonStoreError(.unavailable, $0) }) { db in
            try Int.fetchOne(db, sql: "PRAGMA synchronous")
        }
        #expect(synchronous == 2)  // FULL
        // And no temporary file a transaction.
        let tempStore = try store.read(failing: { DaemonStoreError(.unavailable, $0) }) { db in
            try Int.fetchOne(db, sql: "PRAGMA temp_store")
        }
        #expect(tempStore == 2)  // MEMORY
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAlone() throws {
        let f = try WalletFixture()
        let garbage = Array("not a database, but someone's notes\n".utf8) + Array(repeating: 0x41, count: 4096)
        try Data(garbage).write(to: URL(fileURLWithPath: f.path))
        let error = #expect(throws: DaemonStoreError.self) { try DaemonStore(path: f.path) }
        #expect(error?.code == .unavailable)
        #expect(try Data(contentsOf: URL(fileURLWithPath: f.path)) == Data(garbage))
    }

    @Test func aFileFromANewerSchemaIsRefusedAndKeepsItsData() throws {
        let f = try WalletFixture()
        try f.wallet().add(try f.voucher(1_000))
        // What a later blepay would have added.
        try DatabaseQueue(path: f.path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('99 later')")
        }
        let error = #expect(throws: DaemonStoreError.self) { try DaemonStore(path: f.path) }
        #expect(error?.code == .newerSchema)
        let vouchers = try DatabaseQueue(path: f.path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM vouchers") }
        #expect(vouchers == 1)
    }

    @Test func aFileWhoseMigrationFailsIsRolledBack() throws {
        let f = try WalletFixture()
        // A table in the way of the first migration: it fails, and nothing of it stays.
        try DatabaseQueue(path: f.path).write { db in
            try db.execute(sql: "CREATE TABLE voucher_uses (x INTEGER); INSERT INTO voucher_uses VALUES (7)")
        }
        let error = #expect(throws: DaemonStoreError.self) { try DaemonStore(path: f.path) }
        #expect(error?.code == .migrationFailed)
        let tables = try DatabaseQueue(path: f.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        #expect(!tables.contains("vouchers"))
        #expect(try DatabaseQueue(path: f.path).read { db in try Int.fetchOne(db, sql: "SELECT x FROM voucher_uses") } == 7)
    }
}
