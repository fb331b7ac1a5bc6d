import BlepayDaemon
import BlepayLedgerClient
import LedgerTestSupport
import Synchronization
import Testing

/// Whether a daemon believes the ledger reachable, and when it asks.
@Suite struct LedgerReachabilityTests {
    /// Nothing listens on the discard port: a probe that is sent finds the ledger unreachable.
    let reachability = LedgerReachability(
        ledger: LedgerClient(baseURL: "http://127.0.0.1:9", credentials: .none, logger: testLogger), logger: testLogger,
        meaning: (reachable: "reachable", unreachable: "unreachable"))

    /// What follows the ledger's reach (the advertisement, the standing call, the settlement rounds) hears of each
    /// change, every follower alike.
    @Test func everyFollowerHearsOfEachChange() async {
        let followers = [reachability.changes(), reachability.changes()]
        reachability.record(false)
        for follower in followers {
            var iterator = follower.makeAsyncIterator()
            #expect(await iterator.next() == false)
        }
        reachability.record(false)
        reachability.record(true)
        for follower in followers {
            var iterator = follower.makeAsyncIterator()
            #expect(await iterator.next() == true)
        }
    }

    /// Every daemon probes the ledger every few seconds, and each probe took the ledger's one write transaction (as
    /// every request did), queueing behind payments: what anyone may read is now read in a read transaction.
    @Test func aProbeCostsTheLedgerNoWrite() async throws {
        // No expiry sweeps during the test: they are the ledger's own writes.
        let (ledger, storage) = try await RunningLedger.watched(.sqlite) { $0.expiryIntervalSeconds = 3600 }
        let merchant = try await ledger.merchant()
        let probing = LedgerReachability(ledger: merchant.client, logger: testLogger, meaning: ("reachable", "unreachable"))
        let before = storage.writes.load(ordering: .relaxed)
        for _ in 0..<3 { #expect(await probing.probe()) }
        #expect(storage.writes.load(ordering: .relaxed) == before)
        // A device's own read still spends its nonce.
        _ = try await merchant.client.denyList()
        #expect(storage.writes.load(ordering: .relaxed) == before + 1)
        try await ledger.stop()
    }
}
