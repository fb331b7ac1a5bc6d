import BlepayControl
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayLedgerClient
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Foundation
import Logging

let testLogger = Logger(label: "blepay.daemon.test")
let fixedNow = Timestamp(millisecondsSince1970: 1_795_000_000_000)

/// The merchant's certificate the in-memory sessions show, signed by a ledger key of the test's own.
let testCertificate = certificate(merchantID: "m_cafe", signingKey: SigningKey().publicKey)

/// A certificate for `signingKey` of merchant `merchantID`, signed by a ledger key of the test's own.
func certificate(merchantID: String, signingKey: Key32) -> MerchantCertificate {
    let ledgerKey = SigningKey()
    return try! MerchantCertificate(
        merchantID: merchantID, merchantName: "Café", signingKey: signingKey, noiseKey: SigningKey().publicKey,
        validFrom: fixedNow, validUntil: fixedNow.adding(milliseconds: 3_600_000),
        ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
    ).signed(by: ledgerKey)
}

/// Vouchers in a fresh state file, issued through `ledger` (by default a ledger that cannot be reached) to
/// `deviceKey` and signed by one of `trusted`.
func testVouchers(
    ledger: LedgerClient? = nil, deviceKey: Key32 = SigningKey().publicKey, trusting trusted: [Key32] = [],
    clock: @escaping @Sendable () -> Timestamp = { fixedNow }
) throws -> CustomerVouchers {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-vouchers-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let store = try DaemonStore(path: directory.appendingPathComponent(DaemonStore.fileName).path)
    // Nothing listens on port 9 (discard): every call fails, within the second the client keeps trying to connect.
    let client = ledger ?? LedgerClient(
        baseURL: "http://127.0.0.1:9", credentials: .none, retry: .init(attempts: 1, timeout: .seconds(1)), logger: testLogger)
    return CustomerVouchers(
        wallet: VoucherWallet(store: store, deviceKey: deviceKey, trusting: TrustedLedgerKeys(trusted)), ledger: client,
        clock: clock)
}

/// A daemon's payment history in the state file at `path`.
func testHistory(_ path: String, _ role: DaemonConfiguration.Role) throws -> HistoryRecorder {
    HistoryRecorder(history: PaymentHistory(store: try DaemonStore(path: path)), role: role, clock: { fixedNow }, logger: testLogger)
}

/// Both daemons' services on an in-memory network, their control objects on a private bus, and a client
/// connection that calls them and hears their signals.
final class ControlFixture: Sendable {
    let bus: TestBus
    let client: DBusConnection
    let network = InMemoryNetwork(certificate: testCertificate)
    let ledger: InMemoryLedger
    let customer: CustomerService
    let business: BusinessService
    private let tasks: [Task<Void, Never>]

    /// `ledgerLatency`: how long each execution takes; `vouchers`: the customer's; `history`: the state files each
    /// side keeps its payment history in (none without).
    init(
        ledgerLatency: Duration = .zero, vouchers: CustomerVouchers? = nil,
        history: (customer: String, business: String)? = nil,
        wallet: CustomerControl.Wallet = CustomerControl.Wallet(list: { [] }, addCard: { _, _, _, _ in "card-1" })
    ) async throws {
        let vouchers = try vouchers ?? testVouchers()
        let recorders = try history.map { paths in
            try (customer: testHistory(paths.customer, .customer), business: testHistory(paths.business, .business))
        }
        ledger = InMemoryLedger(latency: ledgerLatency)
        bus = try TestBus()
        client = try await bus.connect()
        let network = network
        customer = CustomerService(
            links: {
                let (transport, _) = network.connectCustomer()
                return CustomerService.Links(transport: transport) {
                    while (try? await Task.sleep(for: .seconds(3600))) != nil {}
                }
            }, signer: SigningKey(), history: recorders?.customer, clock: { fixedNow }, logger: testLogger)
        business = BusinessService(
            links: BusinessService.Links(transport: network.business) {
                while (try? await Task.sleep(for: .seconds(3600))) != nil {}
            },
            ledger: ledger, signer: SigningKey(), merchant: .init(id: "m_cafe", name: "Café"),
            settings: .init(), history: recorders?.business, clock: { fixedNow }, logger: testLogger)
        let (customerBus, businessBus) = (try await bus.connect(), try await bus.connect())
        let (customer, business) = (customer, business)
        tasks = [
            Task {
                try? await CustomerControl.serve(
                    customer, on: customerBus, wallet: wallet, vouchers: vouchers, clock: { fixedNow }, logger: testLogger)
            },
            Task { try? await BusinessControl.serve(business, on: businessBus, logger: testLogger) },
            Task { try? await business.serveLinks() },
            Task { await business.runPayments() },
        ]
        for name in [ControlAPI.customerBusName, ControlAPI.businessBusName] {
            for _ in 0..<200 where try await client.nameOwner(name) == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    func stop() {
        for task in tasks { task.cancel() }
        network.shutdown()
        bus.stop()
    }

    func call(
        _ role: DaemonConfiguration.Role, _ member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) -> DBusMessage {
        let (name, path, interface) = ControlAPI.address(role)
        return try await client.call(destination: name, path: path, interface: interface, member: member, arguments: arguments)
    }

    /// The `PaymentEvent` signals of one daemon, as (kind, payment id, details).
    func events(_ role: DaemonConfiguration.Role) async throws -> SignalQueue {
        let interface = ControlAPI.address(role).interface
        return SignalQueue(try await client.signals(matching: DBusMatchRule(interface: interface, member: ControlAPI.eventSignal)))
    }
}

/// Signals in arrival order, read as the control API's typed events; `next` waits for the next one of a kind,
/// skipping others, up to a deadline.
final class SignalQueue: @unchecked Sendable {
    private var iterator: AsyncStream<DBusMessage>.Iterator

    init(_ stream: AsyncStream<DBusMessage>) { iterator = stream.makeAsyncIterator() }

    func next(_ kind: ControlEvent.Kind, timeout: Duration = .seconds(10)) async throws -> ControlEvent {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = await iterator.next() else { break }
            let event = try ControlEvent(signal: message)
            if event.kind == kind { return event }
        }
        throw Missing(kind: kind)
    }

    struct Missing: Error { let kind: ControlEvent.Kind }
}
