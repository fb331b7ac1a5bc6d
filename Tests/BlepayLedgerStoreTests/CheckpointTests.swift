@testable import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Testing

/// The SQLite writer never checkpoints; the checkpointer's connection does, and loses nothing.
@Suite struct CheckpointTests {
    func withFile(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-checkpoint-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(directory.appendingPathComponent("ledger.sqlite").path)
    }

    func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    @Test func theWriterLeavesTheWALToTheCheckpointer() async throws {
        try await withFile { path in
            let storage = try SQLiteStorage(path: path, logger: testLogger)
            let autocheckpoint = try await storage.write { tx in try tx.row("PRAGMA wal_autocheckpoint", [])?.integer(0) }
            #expect(autocheckpoint == 0)
            try await storage.close()
        }
    }

    /// GRDB sets `synchronous = NORMAL` when it turns WAL on, after the connection's own setup: a payment answered as
    /// executed would then survive the ledger's crash but not the machine's.
    @Test func theWriterSyncsEveryCommit() async throws {
        try await withFile { path in
            let storage = try SQLiteStorage(path: path, logger: testLogger)
            let synchronous = try await storage.write { tx in try tx.row("PRAGMA synchronous", [])?.integer(0) }
            #expect(synchronous == 2)  // FULL
            // And no temporary file a transaction.
            let tempStore = try await storage.write { tx in try tx.row("PRAGMA temp_store", [])?.integer(0) }
            #expect(tempStore == 2)  // MEMORY
            try await storage.close()
        }
    }

    /// Under writes that never pause, with reads beside them, the WAL starts over once it holds `restartFrames`
    /// instead of growing for as long as the writes go on (it had grown to 450 MB in 8,000 payments).
    @Test func theWALStaysBoundedUnderSteadyWrites() async throws {
        try await withFile { path in
            let restartFrames = 200
            let storage = try SQLiteStorage(
                path: path, checkpointDelay: .milliseconds(10), restartFrames: restartFrames, logger: testLogger)
            try await storage.write { tx in try tx.run("CREATE TABLE items (id INTEGER PRIMARY KEY, b BLOB)", []) }
            let blob = SQLValue.blob([UInt8](repeating: 7, count: 3_000))
            let writers = 8, writes = 400
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<writes {
                            try await storage.write { tx in
                                try tx.run("INSERT INTO items (id, b) VALUES (?, ?)", [.integer(Int64(writer * writes + index)), blob])
                            }
                            _ = try await storage.read { tx in try tx.row("SELECT COUNT(*) FROM items", []) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Each insert writes at least one frame: the writes made many times what the WAL may hold.
            let frame = 4096 + 24
            #expect(writers * writes > 5 * restartFrames)
            #expect(walSize(path) <= 2 * restartFrames * frame, "the WAL grew to \(walSize(path) / frame) frames")
            let count = try await storage.read { tx in try tx.row("SELECT COUNT(*) FROM items", []) }
            #expect(try count?.integer(0) == Int64(writers * writes))
            try await storage.close()
        }
    }

    @Test func checkpointedRowsSurviveAReopen() async throws {
        try await withFile { path in
            let storage = try SQLiteStorage(path: path, logger: testLogger)
            try await storage.write { tx in try tx.run("CREATE TABLE items (id INTEGER PRIMARY KEY, b BLOB)", []) }
            // More pages than SQLite's automatic checkpoint lets the WAL hold (1,000).
            let blob = SQLValue.blob([UInt8](repeating: 7, count: 3_000))
            for batch in 0..<20 {
                try await storage.write { tx in
                    for index in 0..<100 { try tx.run("INSERT INTO items (id, b) VALUES (?, ?)", [.integer(Int64(batch * 100 + index)), blob]) }
                }
            }
            // (The checkpointer may have run after some commits already.)
            let result = try storage.checkpointer.checkpoint()
            #expect(result.walFrames > 0 && result.checkpointed == result.walFrames)
            // The next commit starts the WAL over from its beginning instead of growing it.
            let before = walSize(path)
            try await storage.write { tx in try tx.run("INSERT INTO items (id, b) VALUES (?, ?)", [.integer(5_000), blob]) }
            #expect(walSize(path) == before)
            try await storage.close()

            let reopened = try SQLiteStorage(path: path, logger: testLogger)
            let count = try await reopened.read { tx in try tx.row("SELECT COUNT(*), SUM(length(b)) FROM items", []) }
            #expect(try count?.integer(0) == 2_001 && count?.integer(1) == 2_001 * 3_000)
            try await reopened.close()
        }
    }
}
