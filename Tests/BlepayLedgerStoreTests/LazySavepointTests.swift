import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// PostgreSQL sets a savepoint only before its first write and never releases one (a statement each); what a savepoint
/// promises holds on both databases all the same.
extension StorageTests {
    @Test(arguments: StorageKind.allCases)
    func aSavepointThatOnlyReadUndoesNothingAndTheTransactionGoesOn(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            let seen = try await storage.write { tx in
                try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(1)])
                do {
                    try tx.savepoint { () throws -> Void in
                        _ = try tx.rows("SELECT id FROM items" + tx.dialect.forUpdate, [])
                        throw Boom(id: 1)
                    }
                } catch {}
                try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(2)])
                return try tx.rows("SELECT id FROM items ORDER BY id", []).map { try $0.integer(0) }
            }
            #expect(seen == [1, 2])
            #expect(try await ids(storage) == [1, 2])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func manySavepointsInOneTransactionKeepWhatEachDid(_ kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            try await createItems(storage)
            try await storage.write { tx in
                for id in 1...100 {
                    do {
                        try tx.savepoint { () throws -> Void in
                            try tx.run("INSERT INTO items (id) VALUES (?)", [.integer(Int64(id))])
                            if id % 3 == 0 { throw Boom(id: id) }
                        }
                    } catch {}
                }
            }
            #expect(try await ids(storage) == (1...100).filter { $0 % 3 != 0 }.map(Int64.init))
        }
    }
}
