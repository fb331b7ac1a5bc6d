import BlepayBLE
import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// The business's transport on hci0 of a fixture of its own, with customers that trust its merchant.
struct BusinessUnderTest {
    let f: BLEFixture
    let merchant: Merchant
    /// What the transport presents; a test renews it.
    let presented: PresentedCertificate
    let transport: BusinessTransport
    let events: Recorder<TransportEvent>
    let run: Task<Void, any Error>

    static func start(_ configure: (inout BusinessTransport.Configuration) -> Void = { _ in }) async throws
        -> BusinessUnderTest
    {
        let f = try await BLEFixture()
        let merchant = try Merchant()
        let presented = PresentedCertificate(merchant.certificate)
        var configuration = BusinessTransport.Configuration(staticKey: merchant.staticKey, certificate: presented)
        configure(&configuration)
        let transport = BusinessTransport(
            adapter: f.adapter, configuration: configuration, logger: testLogger, clock: wallClock)
        let events = Recorder(transport.events)
        let run = try await running { ready in try await transport.run(ready: ready) }
        return BusinessUnderTest(
            f: f, merchant: merchant, presented: presented, transport: transport, events: events, run: run)
    }


    /// A customer advertising on hci0; `connectOutcome` is what its Connect does.
    func customer(
        _ n: Int, answersHandshake: Bool = true, capabilities: Capabilities = [.online],
        connectOutcome: (@Sendable (Int) -> FakeBluetoothd.ConnectOutcome)? = nil
    ) async throws -> FakeCustomer {
        let customer = try FakeCustomer(
            address: String(format: "00:CC:00:00:00:%02X", n), trusting: merchant.trustedLedgerKeys,
            capabilities: capabilities, answersHandshake: answersHandshake)
        try await customer.advertise(on: f.bluetoothd, connectOutcome: connectOutcome)
        return customer
    }

    /// Waits until the business reports `customer`'s current link connected, and returns its peer.
    func connected(_ customer: FakeCustomer, within limit: Duration = .seconds(5)) async throws -> PeerID {
        try await events.first("\(customer.address) connected", within: limit) { event in
            guard let (peer, session) = event.connected, session.sessionHash == customer.peer.session?.sessionHash
            else { return nil }
            return peer
        }
    }

    func removed(_ device: DBusObjectPath) -> Bool {
        f.bluetoothd.calls("RemoveDevice").contains { $0.arguments == [.objectPath(device)] }
    }

    func stop() { f.stop(run) }
}

/// The business's side over the bluetoothd stand-in, with customers that speak the protocol on remote devices.
@Suite(.timeLimit(.minutes(1))) struct BusinessTransportTests {
    @Test func aCustomerIsConnectedExchangesMessagesAndIsLost() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        let customer = try await b.customer(1, capabilities: [.online, .preAuthorization])
        let established = try await customer.events.first("the customer's session") { event in
            if case .established(let session) = event { session } else { nil }
        }
        let (peer, session) = try await b.events.first("connected") { $0.connected }
        #expect(session == established)
        #expect(session.certificate == b.merchant.certificate)
        #expect(session.capabilities == [.online, .preAuthorization] && session.version == 1)

        let request = try b.merchant.request()
        b.transport.send(.paymentRequest(request), to: peer)
        try await customer.events.contains("the request at the customer") { $0 == .received(.paymentRequest(request)) }
        let cancel = CancelPayment(paymentID: request.paymentID, reason: .userCancelled)
        customer.send(.cancelPayment(cancel))
        try await b.events.contains("the cancel at the business") { $0 == .received(peer, .cancelPayment(cancel)) }

        try await customer.disconnect()
        try await b.events.contains("disconnected") { $0.disconnected == peer }
        // Forgotten, so that its next advertisement finds it afresh.
        try await eventually("the customer removed") { b.removed(customer.device) }
    }

    /// A certificate renewed while the transport runs is shown from the next handshake on: the next customer, which
    /// verifies it in the handshake, is shown the new one; the one connected before keeps its session.
    @Test func aRenewedCertificateIsShownFromTheNextHandshakeOn() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        let first = try await b.customer(1)
        _ = try await b.connected(first)
        let renewed = try b.merchant.certificate(validFrom: wallClock())
        b.presented.replace(with: renewed)

        let second = try await b.customer(2)
        let established = try await second.events.first("the second customer's session") { event in
            if case .established(let session) = event { session } else { nil }
        }
        #expect(established.certificate == renewed)
        let peer = try await b.connected(second)
        #expect(b.events.all.contains { $0.connected?.0 == peer && $0.connected?.1.certificate == renewed })
        #expect(b.events.all.contains { $0.connected?.1.certificate == b.merchant.certificate })
    }

    @Test func afterBluetoothdRestartsTheBusinessScansAndConnectsAgain() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        let customer = try await b.customer(1)
        let first = try await b.connected(customer)

        let restarted = try await b.f.restartBluetoothd()
        try await b.events.contains("disconnected") { $0.disconnected == first }
        // The adapter comes back unpowered: the business powers it and discovers again.
        try await eventually("discovering again", within: .seconds(10)) { !restarted.calls("StartDiscovery").isEmpty }
        #expect(restarted.calls("Set Powered").map(\.arguments) == [[.boolean(true)]])
        try await customer.advertise(on: restarted)
        let second = try await b.connected(customer)
        #expect(second != first)
    }

    @Test func afterAPowerCycleTheBusinessScansAndConnectsAgain() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        let customer = try await b.customer(1)
        let first = try await b.connected(customer)

        try await b.f.bluetoothd.power("hci0", false)
        try await b.events.contains("disconnected") { $0.disconnected == first }
        try await eventually("the customer removed") { b.removed(customer.device) }
        let started = b.f.bluetoothd.calls("StartDiscovery").count
        try await b.f.bluetoothd.power("hci0", true)
        try await eventually("discovering again") { b.f.bluetoothd.calls("StartDiscovery").count > started }
        try await customer.advertise(on: b.f.bluetoothd)
        let second = try await b.connected(customer)
        #expect(second != first)
    }

    /// One request's messages reach twenty customers connected at once (the default `maximumConnections`).
    @Test func twentyCustomersAreServedAtOnce() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        var customers: [FakeCustomer] = []
        for n in 1...20 { customers.append(try await b.customer(n)) }
        var peers: [PeerID] = []
        for customer in customers { peers.append(try await b.connected(customer, within: .seconds(20))) }
        #expect(Set(peers).count == 20)

        let request = try b.merchant.request()
        for peer in peers { b.transport.send(.paymentRequest(request), to: peer) }
        for customer in customers {
            try await customer.events.contains("the request at \(customer.address)") {
                $0 == .received(.paymentRequest(request))
            }
        }
    }
}
