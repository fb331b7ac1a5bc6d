import BlepayDaemon
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// Both sides offline, end to end: the business's and the customer's services with their real state files, joined
/// by the in-memory network, against a real ledger (HTTP, SQLite) that goes down and comes back. A payment made
/// while it is down rides on the customer's voucher, finishes pending settlement on both sides, waits in the
/// business's state file, and is settled once, to the minor unit, when the ledger is back.
@Suite(.timeLimit(.minutes(2))) struct OfflinePaymentTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")

    struct Waiting: Decodable, Equatable {
        let waiting: UInt32
        let totals: [String: UInt64]
        let ledger_reachable: Bool
    }

    /// `blepayctl settlement --json` against the business's control API on `bus`.
    func waiting(_ bus: TestBus, _ more: [String] = []) async throws -> Waiting {
        let run = try await Self.blepayctl.run(["settlement", "--json", "--bus", bus.address] + more)
        #expect(run.status == 0, "\(run.output)")
        return try JSONDecoder().decode(Waiting.self, from: Data(run.output.utf8))
    }

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
            let bus = try TestBus()
            let control = try await bus.connect()
            let payments = Task { await business.runPayments() }
            let served = Task { try? await BusinessControl.serve(business, on: control, logger: testLogger) }
            defer {
                served.cancel()
                payments.cancel()
                bus.stop()
            }
            // The business's events as an app hears them: signals of its control API.
            let app = try await bus.connect()
            for _ in 0..<200 where try await app.nameOwner(ControlAPI.businessBusName) == nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            let shop = SignalQueue(try await app.signals(
                matching: DBusMatchRule(interface: ControlAPI.businessInterface, member: ControlAPI.eventSignal)))
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
                let finished = try await shop.next(.finished)
                #expect(finished.paymentID == id.description && finished.details.receiptStatus == "pendingSettlement")
                #expect(try queue.outcome(of: id) == nil)
                #expect(try await waiting(bus) == Waiting(waiting: 1, totals: ["EUR": 2650], ledger_reachable: false))
                return id
            }

            // Back: settled once, the merchant credited amount plus tip from the voucher's escrow.
            // With the receipt the ledger signed for it, as an online payment's.
            let settled = try await shop.next(.settled, timeout: .seconds(20))
            #expect(settled.paymentID == id.description && settled.details.receiptStatus == "settled")
            #expect(settled.details.transactionID != nil && settled.details.amount == 2550 && settled.details.tip == 100)
            #expect(try queue.outcome(of: id) == .settled)
            #expect(try await waiting(bus, ["--now"]) == Waiting(waiting: 0, totals: [:], ledger_reachable: true))
            let credited = try await ledger.admin.account(merchant.account.id).balances.first { $0.currency == "EUR" }?.posted
            #expect(credited == 2650)
            try await Task.sleep(for: .milliseconds(500))
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
