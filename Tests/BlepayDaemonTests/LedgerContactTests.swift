import BlepayDaemon
import BlepayDaemonStore
import BlepayLedgerClient
import BlepayProtocol
import LedgerTestSupport
import Synchronization
import Testing
import TestSupport

/// The daemons' standing call at the ledger, in place of polling it.
@Suite(.timeLimit(.minutes(2))) struct LedgerContactTests {
    /// A business with nothing waiting asked the ledger at every settlement round (its deny list, or a probe), each
    /// call waking both: it now holds one call, which the ledger answers when the deny list changes.
    @Test func anIdleBusinessHoldsOneCallAndHearsOfAVoidedVoucherAtOnce() async throws {
        // No expiry sweeps: they are the ledger's own writes.
        let (ledger, storage) = try await RunningLedger.watched(.sqlite) { $0.expiryIntervalSeconds = 3600 }
        let merchant = try await ledger.merchant()
        let customer = try await ledger.customer(balance: 10_000)
        let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
        let vouchers = try testVouchers(
            ledger: customer.client, deviceKey: customer.key.publicKey, trusting: [ledgerKey], clock: DaemonContext.systemClock)
        let voucher = try await vouchers.obtain(
            instrumentID: try #require(customer.instrument?.id), limit: try Money(decimal: "40.00", currency: Currency("EUR")),
            lifetimeSeconds: 3600)

        let store = try DaemonStore(path: scratchFile("business-state.sqlite"))
        let denyLists = DenyListStore(store: store)
        let settlement = OfflineSettlement(
            queue: SettlementQueue(store: store), ledger: merchant.client,
            settings: .init(interval: .milliseconds(200), limits: .unlimited),
            denyList: DenyListRefresh(
                store: denyLists, ledger: merchant.client, trusted: TrustedLedgerKeys([ledgerKey]),
                maximumAgeMilliseconds: 3_600_000, clock: DaemonContext.systemClock, logger: testLogger),
            clock: DaemonContext.systemClock, logger: testLogger)
        let running = Task { await settlement.run() }
        try await eventually("the deny list kept") { (try? denyLists.latest()) != nil }

        // Each device call spends a nonce, a write: once the call that follows the first answer is held, ten
        // intervals pass without one.
        try await Task.sleep(for: .milliseconds(500))
        let before = storage.writes.load(ordering: .relaxed)
        try await Task.sleep(for: .seconds(2))
        #expect(storage.writes.load(ordering: .relaxed) == before)
        #expect(settlement.ledgerReachable)

        _ = try await customer.client.voidPreAuthorization(voucher.voucher.voucherID.description)
        try await eventually("a deny list naming the voucher", within: .seconds(10)) {
            (try? denyLists.latest())??.denies(voucher: voucher.voucher.voucherID) == true
        }
        running.cancel()
        await running.value
        try await ledger.stop()
    }
}
