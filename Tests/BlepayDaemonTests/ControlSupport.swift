import BlepayDaemon
import BlepayPayments
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Logging

let testLogger = Logger(label: "blepay.daemon.test")
let fixedNow = Timestamp(millisecondsSince1970: 1_795_000_000_000)

/// Acceptances signed with a device key and checked against it, for links without a session (in memory).
struct DeviceSignatures: AcceptanceSigner, AcceptanceVerifier {
    let key = SigningKey()

    func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, peer: PeerID) throws(PaymentError) -> PaymentAcceptance {
        do {
            return try PaymentAcceptance(
                paymentID: request.paymentID, amount: request.amount, tipMinorUnits: terms.tipMinorUnits,
                instrumentID: terms.instrumentID, delegatedInstrument: terms.delegatedInstrument,
                createdAt: terms.acceptedAt, requestHash: request.hash, sessionHash: Hash32(Array(repeating: 0, count: 32)),
                customerKey: key.publicKey, preAuthorization: nil, signature: .unsigned
            ).signed(by: key)
        } catch {
            throw PaymentError(.unexpected, "\(error)")
        }
    }

    func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, from peer: PeerID) -> PaymentError? {
        guard acceptance.requestHash == request.hash,
            isValidSignature(acceptance.signature, of: acceptance.signingBytes, by: acceptance.customerKey)
        else { return PaymentError(.securityFailure) }
        return nil
    }
}

/// Both daemons' services on an in-memory network, their control objects on a private bus, and a client
/// connection that calls them and hears their signals.
final class ControlFixture: Sendable {
    let bus: TestBus
    let client: DBusConnection
    let network = InMemoryNetwork()
    let ledger: InMemoryLedger
    let customer: CustomerService
    let business: BusinessService
    private let tasks: [Task<Void, Never>]

    /// `ledgerLatency`: how long each execution takes.
    init(ledgerLatency: Duration = .zero) async throws {
        ledger = InMemoryLedger(latency: ledgerLatency)
        bus = try TestBus()
        client = try await bus.connect()
        let (network, signatures) = (network, DeviceSignatures())
        customer = CustomerService(
            links: {
                let (transport, _) = network.connectCustomer()
                return CustomerService.Links(transport: transport, signer: signatures) {
                    while (try? await Task.sleep(for: .seconds(3600))) != nil {}
                }
            }, clock: { fixedNow }, logger: testLogger)
        business = BusinessService(
            links: BusinessService.Links(transport: network.business, verifier: signatures) {
                while (try? await Task.sleep(for: .seconds(3600))) != nil {}
            },
            ledger: ledger, signer: SigningKey(), merchant: .init(id: "m_cafe", name: "Café"),
            settings: .init(), clock: { fixedNow }, logger: testLogger)
        let (customerBus, businessBus) = (try await bus.connect(), try await bus.connect())
        let (customer, business) = (customer, business)
        tasks = [
            Task {
                let wallet = CustomerControl.Wallet(list: { [] }, addCard: { _, _, _, _ in "card-1" })
                try? await CustomerControl.serve(customer, on: customerBus, wallet: wallet, logger: testLogger)
            },
            Task { try? await BusinessControl.serve(business, on: businessBus, logger: testLogger) },
            Task { await business.run() },
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

/// Signals in arrival order; `next` waits for the next one matching, skipping others, up to a deadline.
final class SignalQueue: @unchecked Sendable {
    struct Event {
        let kind: String
        let paymentID: String
        let details: [String: DBusValue]
    }

    private var iterator: AsyncStream<DBusMessage>.Iterator

    init(_ stream: AsyncStream<DBusMessage>) { iterator = stream.makeAsyncIterator() }

    func next(_ kind: String, timeout: Duration = .seconds(10)) async throws -> Event {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let message = await iterator.next() else { break }
            let a = message.arguments
            let event = Event(
                kind: try a[0].decode(String.self), paymentID: try a[1].decode(String.self),
                details: try a[2].decode([String: DBusValue].self))
            if event.kind == kind { return event }
        }
        throw Missing(kind: kind)
    }

    struct Missing: Error { let kind: String }
}
