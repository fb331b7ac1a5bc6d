import BlepayDaemon
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// Both sides offline, end to end: the business's and the customer's services with their real state files, joined
/// by the in-memory network, against a real ledger (HTTP, SQLite) that goes down and comes back. A payment made
/// while it is down rides on the customer's voucher, finishes pending settlement on both sides, waits in the
/// business's state file, and is settled once, to the minor unit, when the ledger is back.
@Suite(.timeLimit(.minutes(2))) struct OfflinePaymentTests {
    @Test func aPaymentMadeWhileTheLedgerIsDownFinishesPendingAndIsSettledOnceItIsBack() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let clock = DaemonContext.systemClock
            let merchant = try await ledger.merchant()
            let customer = try await ledger.customer(balance: 10_000)
            let card = try #require(customer.instrument?.id)
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let vouchers = try testVouchers(
                ledger: customer.client, deviceKey: customer.key.publicKey, trusting: [ledgerKey], clock: clock)
            _ = try await vouchers.obtain(instrumentID: card, limit: try Money(decimal: "40.00", currency: Currency("EUR")), lifetimeSeconds: 3600)

            let queue = SettlementQueue(store: try DaemonStore(path: scratchFile("business-state.sqlite")))
            let settlement = OfflineSettlement(
                queue: queue, ledger: merchant.client,
                settings: .init(interval: .milliseconds(200), limits: .init(
                    maximumCount: 10, maximumTotalMinorUnits: 10_000, maximumAgeMilliseconds: 3_600_000)),
                clock: clock, logger: testLogger)
            let network = InMemoryNetwork(certificate: testCertificate)
            let business = BusinessService(
                links: BusinessService.Links(transport: network.business) { try await Task.sleep(for: .seconds(3600)) },
                ledger: LedgerBackend(client: merchant.client), signer: merchant.key,
                merchant: .init(id: merchant.account.id, name: merchant.account.name),
                offline: (OfflinePolicy(trusted: TrustedLedgerKeys([ledgerKey]), currency: try Currency("EUR"), maximumPaymentMinorUnits: 5_000), settlement),
                settings: .init(), clock: clock, logger: testLogger)
            let shop = Recorder(business.events)
            let payments = Task { await business.runPayments() }
            defer { payments.cancel() }
            let phone = CustomerService(
                links: {
                    let (transport, _) = network.connectCustomer()
                    return CustomerService.Links(transport: transport) { try await Task.sleep(for: .seconds(3600)) }
                }, signer: vouchers.signer(customer.key), clock: clock, logger: testLogger)
            let wallet = Recorder(phone.events)
            await phone.startReceiving()
            defer { network.shutdown() }

            let id = try await ledger.down {
                try await eventually("the ledger unreachable", within: .seconds(30)) { !settlement.ledgerReachable }
                let id = try await business.request(amount: try Money(minorUnits: 2550, currency: Currency("EUR")), reference: "order-1")
                try await wallet.contains("the offline request shown") {
                    if case .receivedPayment(_, let r) = $0 { r.paymentID == id && !r.businessOnline } else { false }
                }
                try await phone.accept(id, amount: try Money(minorUnits: 2550, currency: Currency("EUR")), tipMinorUnits: 100, instrumentID: card, delegated: false)
                // Both sides hear it finished, pending settlement; it waits in the business's state file.
                try await wallet.contains("finishedPayment, pending") {
                    if case .finishedPayment(_, let r) = $0 { r.paymentID == id && r.status == .pendingSettlement } else { false }
                }
                try await shop.contains("finished, pending") {
                    if case .finished(id, _, let r) = $0 { r.status == .pendingSettlement } else { false }
                }
                #expect(try queue.summary() == SettlementQueue.Summary(count: 1, totals: ["EUR": 2650], oldest: try queue.summary().oldest))
                #expect(try queue.outcome(of: id) == nil)
                return id
            }

            // Back: settled once, the merchant credited amount plus tip from the voucher's escrow.
            try await shop.contains("settled", within: .seconds(20)) { $0 == .settled(id) }
            #expect(try queue.outcome(of: id) == .settled)
            #expect(try queue.summary().count == 0)
            let credited = try await ledger.admin.account(merchant.account.id).balances.first { $0.currency == "EUR" }?.posted
            #expect(credited == 2650)
            settlement.settleNow()
            try await Task.sleep(for: .milliseconds(500))
            #expect(shop.all.filter { $0 == .settled(id) }.count == 1)
            #expect(try await ledger.admin.account(merchant.account.id).balances.first { $0.currency == "EUR" }?.posted == 2650)
            #expect(try await ledger.server.audit().isEmpty)
        }
    }
}

/// A scratch file path in a fresh directory.
func scratchFile(_ name: String) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-daemon-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name).path
}
