import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Synchronization
import Testing

/// `/v1/health` tells a load balancer or systemd whether the ledger can answer: once, it said ok with its database
/// gone.
@Suite struct HealthTests {
    @Test(arguments: StorageKind.allCases)
    func healthIsOkOnlyWhileTheDatabaseAnswers(kind: StorageKind) async throws {
        let watched = Mutex<WatchedStorage?>(nil)
        let ledger = try await RunningLedger.start(kind) { _ in } wrap: { storage in
            let wrapper = WatchedStorage(storage)
            watched.withLock { $0 = wrapper }
            return wrapper
        }
        let storage = try #require(watched.withLock { $0 })
        do {
            let up = try await ledger.raw("GET", "/v1/health")
            #expect(up.status == 200 && up.body == Array(#"{"status":"ok"}"#.utf8))
            storage.unavailable.store(true, ordering: .relaxed)
            let down = try await ledger.raw("GET", "/v1/health")
            #expect(down.status == 503 && down.error?.code == "storage.unavailable")
            storage.unavailable.store(false, ordering: .relaxed)
            #expect(try await ledger.raw("GET", "/v1/health").status == 200)
        } catch {
            try? await ledger.stop()
            throw error
        }
        try await ledger.stop()
    }
}
