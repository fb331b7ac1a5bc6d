import BlepayLedgerStore
import LedgerTestSupport
import Testing

/// A command that reads a ledger tells an empty database from a ledger, without creating anything in it.
@Suite struct RequireLedgerTests {
    @Test(arguments: StorageKind.allCases)
    func aDatabaseWithoutTheSchemaHoldsNoLedgerAndIsLeftEmpty(kind: StorageKind) async throws {
        let test = try await makeStorage(kind, migrated: false)
        do {
            await #expect(throws: StorageError(.noLedger, "the database holds no ledger")) {
                try await test.storage.requireLedger()
            }
            // Still nothing there: the check itself created no table.
            await #expect(throws: StorageError(.noLedger, "the database holds no ledger")) {
                try await test.storage.requireLedger()
            }
            try await test.storage.migrate()
            try await test.storage.requireLedger()
        } catch {
            try? await test.destroy()
            throw error
        }
        try await test.destroy()
    }
}
