import BlepayControl
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
import Testing
import TestSupport

/// Offline, end to end: the business's and the customer's services with their real state files, joined by the
/// in-memory network, against a real ledger (HTTP, SQLite). A payment made while it is down rides on the customer's
/// voucher, finishes pending settlement on both sides, waits in the business's state file, and is settled once, to
/// the minor unit, when the ledger is back; one made while only the business is cut off is executed by the customer.
@Suite(.timeLimit(.minutes(2))) struct OfflinePaymentTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")

    struct Waiting: Decodable, Equatable {
        let waiting: UInt32
        let totals: [String: UInt64]
        let ledger_reachable: Bool
    }

    /// A business and a customer, each service with its real state file, joined by the in-memory network, against
    /// `ledger`. The business reaches the ledger through `businessLedger` (a dead address cuts it off alone).
    struct Shop {
        let merchant: RunningLedger.Party
        let customer: RunningLedger.Party
        let card: String
        let vouchers: CustomerVouchers
        let queue: SettlementQueue
        let denyLists: DenyListStore
        /// The customer's copies of what its business kept.
        let customerQueue: SettlementQueue
        /// The business's payments and settlement: cancelled, the business is gone.
        let businessPayments: Task<Void, Never>
        let settlement: OfflineSettlement
        let business: BusinessService
        let phone: CustomerService
        let reachability: LedgerReachability
        let bus: TestBus
        let shop: SignalQueue
        /// The customer's control API's signals: the ledger's verdicts on its copies.
        let phoneSignals: SignalQueue
        let wallet: Recorder<CustomerEvent>

        static func with<T>(
            _ ledger: RunningLedger, businessCutOff: Bool = false, _ body: (Shop) async throws -> T
        ) async throws -> T {
            let clock = DaemonContext.systemClock
            let merchant = try await ledger.merchant()
            let customer = try await ledger.customer(balance: 10_000)
            let card = try #require(customer.instrument?.id)
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let vouchers = try testVouchers(
                ledger: customer.client, deviceKey: customer.key.publicKey, trusting: [ledgerKey], clock: clock)
            _ = try await vouchers.obtain(instrumentID: card, limit: try Money(decimal: "40.00", currency: Currency("EUR")), lifetimeSeconds: 3600)

            let businessClient = businessCutOff
                ? LedgerClient(baseURL: "http://127.0.0.1:9", credentials: merchant.client.credentials,
                    retry: .init(attempts: 1, timeout: .seconds(1)), logger: testLogger)
                : merchant.client
            let store = try DaemonStore(path: scratchFile("business-state.sqlite"))
            let queue = SettlementQueue(store: store)
            let denyLists = DenyListStore(store: store)
            let settlement = OfflineSettlement(
                queue: queue, ledger: businessClient,
                settings: .init(interval: .milliseconds(200), limits: .init(
                    maximumCount: 10, maximumTotalMinorUnits: 10_000, maximumAgeMilliseconds: 3_600_000)),
                denyList: DenyListRefresh(
                    store: denyLists, ledger: businessClient, trusted: TrustedLedgerKeys([ledgerKey]),
                    maximumAgeMilliseconds: 3_600_000, clock: clock, logger: testLogger),
                clock: clock, logger: testLogger)
            // The business's sessions show its own certificate: the customer checks its acknowledgements against it.
            let network = InMemoryNetwork(
                certificate: certificate(merchantID: merchant.account.id, signingKey: merchant.key.publicKey))
            let business = BusinessService(
                links: BusinessService.Links(transport: network.business) { try await Task.sleep(for: .seconds(3600)) },
                ledger: LedgerBackend(client: businessClient), signer: merchant.key,
                merchant: .init(id: merchant.account.id, name: merchant.account.name),
                offline: (OfflinePolicy(trusted: TrustedLedgerKeys([ledgerKey]), currency: try Currency("EUR"), maximumPaymentMinorUnits: 5_000), settlement),
                ledgerKeys: TrustedLedgerKeys([ledgerKey]), settings: .init(), clock: clock, logger: testLogger)
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
            let phoneSignals = SignalQueue(try await app.signals(
                matching: DBusMatchRule(interface: ControlAPI.customerInterface, member: ControlAPI.eventSignal)))
            let reachability = LedgerReachability(
                ledger: customer.client, logger: testLogger, meaning: (reachable: "reachable", unreachable: "unreachable"))
            let customerQueue = SettlementQueue(store: try DaemonStore(path: scratchFile("customer-state.sqlite")))
            let copies = OfflineSettlement(
                queue: customerQueue, ledger: customer.client, settings: .init(interval: .milliseconds(200), limits: .unlimited),
                reachability: reachability, clock: clock, logger: testLogger)
            let copying = Task { await copies.run() }
            defer { copying.cancel() }
            let phone = CustomerService(
                links: {
                    let (transport, _) = network.connectCustomer()
                    return CustomerService.Links(transport: transport) { try await Task.sleep(for: .seconds(3600)) }
                },
                signer: vouchers.signer(customer.key) { reachability.isReachable },
                ledger: LedgerBackend(client: customer.client), settlement: copies, clock: clock, logger: testLogger)
            let wallet = Recorder(phone.events)
            // The customer's control API over the same state file: its settlement calls are what this test asks of
            // it (served with a service of its own, as it relays that one's events, which `wallet` reads here).
            let phoneControl = try await bus.connect()
            let controlled = CustomerService(
                links: { CustomerService.Links(transport: network.connectCustomer().0) { try await Task.sleep(for: .seconds(3600)) } },
                signer: vouchers.signer(customer.key) { reachability.isReachable },
                ledger: LedgerBackend(client: customer.client), settlement: copies, clock: clock, logger: testLogger)
            let phoneServed = Task {
                try? await CustomerControl.serve(
                    controlled, on: phoneControl, wallet: .init(list: { [] }, addCard: { _, _, _, _ in "" }), vouchers: vouchers,
                    settlement: copies, clock: clock, logger: testLogger)
            }
            defer { phoneServed.cancel() }
            for _ in 0..<200 where try await app.nameOwner(ControlAPI.customerBusName) == nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            await phone.startReceiving()
            defer { network.shutdown() }
            return try await body(Shop(
                merchant: merchant, customer: customer, card: card, vouchers: vouchers, queue: queue, denyLists: denyLists, customerQueue: customerQueue, businessPayments: payments, settlement: settlement,
                business: business, phone: phone, reachability: reachability, bus: bus, shop: shop,
                phoneSignals: phoneSignals, wallet: wallet))
        }

        /// Opens a request of 25.50 EUR and has the customer accept it with a 1.00 tip once shown; returns its id.
        func pay(online: Bool) async throws -> PaymentID {
            let id = try await business.request(amount: try Money(minorUnits: 2550, currency: Currency("EUR")), reference: "order-1")
            try await wallet.contains("the request shown") {
                if case .receivedPayment(_, let r) = $0 { r.paymentID == id && r.businessOnline == online } else { false }
            }
            try await phone.accept(id, amount: try Money(minorUnits: 2550, currency: Currency("EUR")), tipMinorUnits: 100, instrumentID: card, delegated: false)
            return id
        }

        /// `blepayctl settlement --json` against the business's control API.
        func waiting(_ more: [String] = []) async throws -> Waiting {
            let run = try await OfflinePaymentTests.blepayctl.run(["settlement", "--json", "--bus", bus.address] + more)
            #expect(run.status == 0, "\(run.output)")
            return try JSONDecoder().decode(Waiting.self, from: Data(run.output.utf8))
        }

        /// `blepayctl settlement list --json` against the business's control API, or the customer's: state by payment.
        func settlements(_ role: String) async throws -> [ControlSettlement] {
            let run = try await OfflinePaymentTests.blepayctl.run(["settlement", "list", "--\(role)", "--json", "--bus", bus.address])
            #expect(run.status == 0, "\(run.output)")
            return try run.output.split(separator: "\n").map { try JSONDecoder().decode(ControlSettlement.self, from: Data($0.utf8)) }
        }

        func merchantBalance(_ ledger: RunningLedger) async throws -> Int64? {
            try await ledger.admin.account(merchant.account.id).balances.first { $0.currency == "EUR" }?.posted
        }
    }

    /// With nothing waiting, a business whose rounds fetched only the deny list never found a ledger back once it
    /// had found it gone (the list is not asked for then): its rounds probe a ledger believed gone.
    @Test func aBusinessWithNothingWaitingFindsTheLedgerBack() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            try await Shop.with(ledger) { shop in
                try await eventually("the ledger's deny list kept") { (try? shop.denyLists.latest()) != nil }
                try await ledger.down {
                    try await eventually("the ledger unreachable", within: .seconds(30)) { !shop.settlement.ledgerReachable }
                }
                try await eventually("the ledger found back", within: .seconds(30)) { shop.settlement.ledgerReachable }
            }
        }
    }

    @Test func aPaymentMadeWhileTheLedgerIsDownFinishesPendingAndIsSettledOnceItIsBack() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            try await Shop.with(ledger) { shop in
                try await eventually("the ledger's deny list kept") { (try? shop.denyLists.latest()) != nil }
                let id = try await ledger.down {
                    try await eventually("the ledger unreachable", within: .seconds(30)) { !shop.settlement.ledgerReachable }
                    #expect(await shop.reachability.probe() == false)
                    let id = try await shop.pay(online: false)
                    // Both sides hear it finished, pending settlement; it waits in the business's state file.
                    try await shop.wallet.contains("finishedPayment, pending") {
                        if case .finishedPayment(_, let r) = $0 { r.paymentID == id && r.status == .pendingSettlement } else { false }
                    }
                    let finished = try await shop.shop.next(.finished)
                    #expect(finished.paymentID == id.description && finished.details.receiptStatus == "pendingSettlement")
                    #expect(try shop.queue.outcome(of: id) == nil)
                    #expect(try await shop.waiting() == Waiting(waiting: 1, totals: ["EUR": 2650], ledger_reachable: false))
                    // Item by item, on both sides: the business's payment and the customer's copy of it wait.
                    let voucher = try #require(try shop.vouchers.list().first).voucher.voucherID.description
                    try await eventually("the customer's copy kept") { (try? shop.customerQueue.summary().count) == 1 }
                    for role in ["business", "customer"] {
                        let kept = try await shop.settlements(role)
                        #expect(kept.map(\.paymentID) == [id.description] && ["waiting", "sending"].contains(kept.first?.state))
                        #expect(kept.first?.details.voucherID == voucher && kept.first?.details.merchantID == shop.merchant.account.id)
                        #expect(kept.first?.details.amount == 2550 && kept.first?.details.tip == 100 && kept.first?.details.endedAt == nil)
                    }
                    return id
                }

                // Back: settled once, the merchant credited amount plus tip from the voucher's escrow.
                // With the receipt the ledger signed for it, as an online payment's.
                let settled = try await shop.shop.next(.settled, timeout: .seconds(20))
                #expect(settled.paymentID == id.description && settled.details.receiptStatus == "settled")
                #expect(settled.details.transactionID != nil && settled.details.amount == 2550 && settled.details.tip == 100)
                #expect(try shop.queue.outcome(of: id) == .settled)
                // The customer's copy is settled too: by its own upload, or as already settled by the business's.
                try await eventually("the customer's copy settled", within: .seconds(10)) {
                    (try? shop.customerQueue.outcome(of: id)) == .settled
                }
                #expect(try await shop.waiting(["--now"]) == Waiting(waiting: 0, totals: [:], ledger_reachable: true))
                for role in ["business", "customer"] {
                    let ended = try await shop.settlements(role)
                    #expect(ended.map(\.paymentID) == [id.description] && ended.first?.state == "settled")
                    #expect(ended.first?.details.endedAt != nil && ended.first?.details.code == nil)
                }
                // What the business gives a customer who lost this result, after a restart: the pair it kept.
                let kept = try #require(await shop.settlement.kept(id))
                #expect(kept.request.paymentID == id && kept.acceptance.total.minorUnits == 2650)
                #expect(kept.acceptance.customerKey == shop.customer.key.publicKey)
                #expect(await shop.settlement.kept(.random()) == nil)
                #expect(try await shop.merchantBalance(ledger) == 2650)
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await shop.merchantBalance(ledger) == 2650)
                #expect(try await ledger.server.audit().isEmpty)
            }
        }
    }

    /// Only the business is cut off: the customer, who reaches the ledger, signs a plain acceptance, executes the
    /// payment once the business's go-ahead names it, and hands the ledger-signed receipt over, which the business
    /// checks offline. Settled at once on both sides; nothing waits for settlement and no voucher is touched.
    @Test func aPaymentWhileOnlyTheBusinessIsOfflineIsExecutedByTheCustomer() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            try await Shop.with(ledger, businessCutOff: true) { shop in
                try await eventually("the business cut off", within: .seconds(30)) { !shop.settlement.ledgerReachable }
                #expect(await shop.reachability.probe())
                let id = try await shop.pay(online: false)
                try await shop.wallet.contains("finishedPayment, settled by the ledger") {
                    if case .finishedPayment(_, let r) = $0 {
                        r.paymentID == id && r.status == .settled && r.payerKey == shop.customer.key.publicKey
                    } else { false }
                }
                let finished = try await shop.shop.next(.finished)
                #expect(finished.paymentID == id.description && finished.details.receiptStatus == "settled")
                #expect(finished.details.transactionID != nil && finished.details.tip == 100)
                #expect(try await shop.merchantBalance(ledger) == 2650)
                #expect(try shop.queue.outcome(of: id) == nil)
                #expect(try await shop.waiting() == Waiting(waiting: 0, totals: [:], ledger_reachable: false))
                #expect(try shop.vouchers.list().map(\.uses) == [0])
                #expect(try await ledger.server.audit().isEmpty)
            }
        }
    }

    /// No device holds the only copy: the business goes away with the payment it kept before it could upload it,
    /// and the customer's copy of the signed pair settles it once the ledger is back, exactly once.
    @Test func aPaymentTheBusinessNeverUploadsIsSettledFromTheCustomersCopy() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            try await Shop.with(ledger) { shop in
                try await eventually("the ledger's deny list kept") { (try? shop.denyLists.latest()) != nil }
                let id = try await ledger.down {
                    try await eventually("the ledger unreachable", within: .seconds(30)) { !shop.settlement.ledgerReachable }
                    #expect(await shop.reachability.probe() == false)
                    let id = try await shop.pay(online: false)
                    try await shop.wallet.contains("finishedPayment, pending") {
                        if case .finishedPayment(_, let r) = $0 { r.paymentID == id && r.status == .pendingSettlement } else { false }
                    }
                    try await eventually("the customer's copy kept") { (try? shop.customerQueue.summary().count) == 1 }
                    shop.businessPayments.cancel()
                    return id
                }
                try await eventually("the customer's copy settled", within: .seconds(20)) {
                    (try? shop.customerQueue.outcome(of: id)) == .settled
                }
                // The customer's app hears the ledger's verdict as the business's would, with the ledger's receipt.
                let settled = try await shop.phoneSignals.next(.settled, timeout: .seconds(10))
                #expect(settled.paymentID == id.description && settled.details.receiptStatus == "settled")
                #expect(settled.details.transactionID != nil && settled.details.amount == 2550 && settled.details.tip == 100)
                #expect(try shop.queue.outcome(of: id) == nil)
                #expect(try await shop.merchantBalance(ledger) == 2650)
                #expect(try await ledger.server.audit().isEmpty)
            }
        }
    }

    /// A voucher voided at the ledger, while the device (this one has not heard) still holds it: the business, which
    /// fetched the ledger's deny list before it lost the ledger, refuses it offline; nothing is kept or settled.
    @Test func aVoucherVoidedAtTheLedgerIsRefusedOfflineFromTheDenyList() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            try await Shop.with(ledger) { shop in
                let voucher = try #require(try shop.vouchers.list().first)
                _ = try await shop.customer.client.voidPreAuthorization(voucher.voucher.voucherID.description)
                try await eventually("a deny list naming the voucher", within: .seconds(10)) {
                    (try? shop.denyLists.latest())??.denies(voucher: voucher.voucher.voucherID) == true
                }
                try await ledger.down {
                    try await eventually("the ledger unreachable", within: .seconds(30)) { !shop.settlement.ledgerReachable }
                    #expect(await shop.reachability.probe() == false)
                    let id = try await shop.pay(online: false)
                    try await shop.wallet.contains("the customer told its voucher was refused") {
                        if case .error(_, id, let error) = $0 { error.code == .preAuthorizationInvalid } else { false }
                    }
                    let refused = try await shop.shop.next(.acceptanceRefused)
                    #expect(refused.paymentID == id.description)
                    #expect(try shop.queue.outcome(of: id) == nil)
                    #expect(try await shop.waiting() == Waiting(waiting: 0, totals: [:], ledger_reachable: false))
                }
                #expect((try await shop.merchantBalance(ledger) ?? 0) == 0)
                #expect(try await ledger.server.audit().isEmpty)
            }
        }
    }
}

/// A scratch file path in a fresh directory.
func scratchFile(_ name: String) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-daemon-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name).path
}
