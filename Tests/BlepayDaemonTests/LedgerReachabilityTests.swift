@testable import BlepayDaemon
import BlepayDaemonStore
import BlepayLedgerClient
import BlepayProtocol
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

    /// A daemon stopping while it asks the ledger learns nothing of the ledger: a stopped daemon's log said the
    /// ledger was unreachable and its deny list not fetched, and its metrics reported the ledger lost.
    @Test func aCallGivenUpByAStoppingDaemonSaysNothingOfTheLedger() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let merchant = try await ledger.merchant()
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let log = LogRecorder()
            let reachability = LedgerReachability(ledger: merchant.client, logger: log.logger, meaning: ("reachable", "unreachable"))
            let store = try DaemonStore(path: scratchFile("state.sqlite"))
            let denyList = DenyListRefresh(
                store: DenyListStore(store: store), ledger: merchant.client, trusted: TrustedLedgerKeys([ledgerKey]),
                maximumAgeMilliseconds: 3_600_000, clock: DaemonContext.systemClock, logger: log.logger)
            let queue = SettlementQueue(store: store)
            let request = try ledger.request(by: merchant, amount: 1_200)
            try queue.enqueue(request, try ledger.acceptance(of: request, by: try await ledger.customer(balance: 5_000)),
                at: DaemonContext.systemClock())
            let settlement = OfflineSettlement(
                queue: queue, ledger: merchant.client, settings: .init(interval: .seconds(60), limits: .unlimited),
                reachability: reachability, clock: DaemonContext.systemClock, logger: log.logger)
            let stopping = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                await reachability.probe()
                await settlement.round()
                return await denyList.refresh(reporting: reachability)
            }
            #expect(await stopping.value == nil)
            #expect(reachability.isReachable)
            #expect(log.lines.isEmpty)
            // Sent again later, as the same batch.
            #expect(try queue.summary().count == 1)
        }
    }
}
