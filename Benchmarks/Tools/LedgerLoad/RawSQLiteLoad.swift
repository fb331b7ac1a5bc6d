import Foundation
import GRDB

/// One small INSERT per transaction, each committed on its own on one connection, in a fresh database in WAL mode
/// with `synchronous` FULL (durable: the WAL is fsynced at every commit) or, to compare, NORMAL (fsynced only at
/// checkpoints: a power loss can lose the last commits).
struct RawSQLiteLoad {
    let directory: String
    let seconds: Double
    let durable: Bool

    func run() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent("raw-\(UUID().uuidString).sqlite")
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        var configuration = Configuration()
        configuration.journalMode = .wal
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        // After opening: GRDB's WAL set-up sets `synchronous = NORMAL` after `prepareDatabase` ran, so a pragma set
        // there would not hold. A queue has one connection; this one stays.
        let synchronous = durable ? "FULL" : "NORMAL"
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        let (journal, level) = try queue.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "", try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1)
        }
        guard journal == "wal", level == (durable ? 2 : 1) else {
            throw LoadError("the raw database is in journal mode \(journal), synchronous \(level), not WAL and \(synchronous)")
        }
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE entries (id INTEGER PRIMARY KEY, payment TEXT NOT NULL, amount INTEGER NOT NULL, at INTEGER NOT NULL)")
        }
        let payment = String(repeating: "a", count: 32)
        func insert(_ index: Int) throws {
            // `write` is one BEGIN … COMMIT: one transaction, committed on its own.
            try queue.write { db in
                try db.execute(sql: "INSERT INTO entries (payment, amount, at) VALUES (?, ?, ?)",
                    arguments: [payment, index, Int64(Date().timeIntervalSince1970 * 1000)])
            }
        }
        for index in 0..<50 { try insert(index) }  // warm-up: the WAL exists and the statement is prepared
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .seconds(seconds) {
            try insert(count)
            count += 1
        }
        let elapsed = (clock.now - start).seconds
        let what = durable ? "sqlite-raw durable transactions" : "sqlite-raw-normal transactions (not durable)"
        print("bench: \(what) " + String(format: "%.0f/s", Double(count) / elapsed)
            + " (one INSERT each, one connection, WAL, synchronous \(synchronous), "
            + String(format: "%d in %.1f s)", count, elapsed))
    }
}
