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

    /// Each settlement round probed the ledger beside the customer's own probe and the deny list's fetch (three
    /// calls where one said it all): a round now asks only when no call got an answer within its interval.
    @Test func aRecentAnswerStandsInForAProbe() async {
        reachability.record(true)
        #expect(await reachability.probe(unlessAnsweredWithin: .seconds(60)))
        #expect(reachability.isReachable)
        // Older than the window: asked, and not answered.
        #expect(await !reachability.probe(unlessAnsweredWithin: .zero))
        // A call that was not answered is no answer: the next round asks again.
        reachability.record(true)
        reachability.record(false)
        #expect(await !reachability.probe(unlessAnsweredWithin: .seconds(60)))
    }

    /// Every daemon probes the ledger every few seconds, and each probe took the ledger's one write transaction (as
    /// every request did), queueing behind payments: what anyone may read is now read in a read transaction.
    @Test func aProbeCostsTheLedgerNoWrite() async throws {
        let watched = Mutex<WatchedStorage?>(nil)
        // No expiry sweeps during the test: they are the ledger's own writes.
        let ledger = try await RunningLedger.start(.sqlite) { $0.expiryIntervalSeconds = 3600 } wrap: { storage in
            let wrapper = WatchedStorage(storage)
            watched.withLock { $0 = wrapper }
            return wrapper
        }
        let merchant = try await ledger.merchant()
        let storage = try #require(watched.withLock { $0 })
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
