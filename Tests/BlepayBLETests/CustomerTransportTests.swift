import BlepayBLE
import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// The customer's transport on hci0 of a fixture of its own, with a merchant its configuration trusts.
struct CustomerUnderTest {
    let f: BLEFixture
    let merchant: Merchant
    let transport: CustomerTransport
    let events: Recorder<TransportEvent>
    let run: Task<Void, any Error>

    /// `prepare` sees the fixture before the transport runs.
    static func start(
        _ configure: (inout CustomerTransport.Configuration) -> Void = { _ in },
        prepare: (BLEFixture) -> Void = { _ in }
    ) async throws -> CustomerUnderTest {
        let f = try await BLEFixture()
        prepare(f)
        let merchant = try Merchant()
        var configuration = CustomerTransport.Configuration(trustedLedgerKeys: merchant.trustedLedgerKeys)
        configure(&configuration)
        let transport = CustomerTransport(
            adapter: f.adapter, configuration: configuration, capabilities: [.online], logger: testLogger,
            clock: wallClock)
        let events = Recorder(transport.events)
        let run = try await running { ready in try await transport.run(ready: ready) }
        return CustomerUnderTest(f: f, merchant: merchant, transport: transport, events: events, run: run)
    }


    /// The advertisement registered now.
    var advertisement: FakeBluetoothd.Registration? { f.bluetoothd.advertisements.values.first }

    func registrations() -> Int { f.bluetoothd.calls("RegisterAdvertisement").count }

    func business(_ address: String = "00:AA:01:01:00:01", writingTo frames: String = GattLayout.toCustomer)
        async throws -> FakeBusiness
    {
        try await FakeBusiness(on: f.bluetoothd, address: address, merchant: merchant, writingTo: frames)
    }

    /// A business that has connected and completed the handshake, and the customer's peer for it.
    func connectedBusiness(_ address: String = "00:AA:01:01:00:01") async throws -> (FakeBusiness, PeerID) {
        let business = try await business(address)
        let session = try await business.events.first("\(address)'s session") { event in
            if case .established(let session) = event { session } else { nil }
        }
        let peer = try await events.first("\(address) connected") { event in
            event.connected.flatMap { $0.1.sessionHash == session.sessionHash ? $0.0 : nil }
        }
        return (business, peer)
    }

    func stop() { f.stop(run) }
}

/// The customer's side over the bluetoothd stand-in, with businesses that speak the protocol as remote centrals.
@Suite(.timeLimit(.minutes(1))) struct CustomerTransportTests {
    /// Whether the business writes requests to 1001 or commands to 1004 (as it does through bluetoothd's socket).
    @Test(arguments: [GattLayout.toCustomer, GattLayout.toCustomerCommands])
    func aBusinessConnectsExchangesMessagesAndLeaves(writingTo frames: String) async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        let business = try await c.business(writingTo: frames)
        let (peer, session) = try await c.events.first("connected") { $0.connected }
        let established = try await business.events.first("the business's session") { event in
            if case .established(let session) = event { session } else { nil }
        }
        #expect(session == established)
        #expect(session.certificate == c.merchant.certificate)
        #expect(session.capabilities == [.online] && session.version == 1)

        let cancel = CancelPayment(paymentID: .random(), reason: .userCancelled)
        c.transport.send(.cancelPayment(cancel), to: peer)
        try await business.events.contains("the cancel at the business") { $0 == .received(.cancelPayment(cancel)) }
        let paid = OtherPaid(paymentID: .random())
        business.peer.send(.otherPaid(paid))
        try await c.events.contains("OtherPaid at the customer") { $0 == .received(peer, .otherPaid(paid)) }

        let registered = c.registrations()
        try await business.central.disconnect()
        try await c.events.contains("disconnected") { $0.disconnected == peer }
        try await eventually("advertising again") { c.registrations() > registered && c.advertisement != nil }
    }

    /// A customer a business is connected to is not advertised: other businesses would connect only to be refused,
    /// and every scanning business would hear of it at each scan. Its advertisement comes back when the link ends.
    @Test func noAdvertisementWhileABusinessIsConnected() async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        #expect(c.advertisement != nil)
        let (business, peer) = try await c.connectedBusiness()
        try await eventually("the advertisement withdrawn") { c.advertisement == nil }
        #expect(c.f.bluetoothd.calls("UnregisterAdvertisement").count == 1)

        try await business.central.disconnect()
        try await c.events.contains("disconnected") { $0.disconnected == peer }
        try await eventually("advertised again") { c.advertisement != nil }
    }

    /// A central that connects without beginning the handshake (anything nearby may connect to devices) does not
    /// hide the customer: it is withdrawn while a business is served, and advertised again once that business has
    /// left although the other central is still connected.
    @Test func aCentralThatHasNotBegunTheHandshakeLeavesTheCustomerAdvertised() async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        let application = try #require(c.f.bluetoothd.applications.values.first)
        let stray = try await c.f.bluetoothd.connectCentral(address: "00:AA:01:01:00:09", to: application)
        let (business, peer) = try await c.connectedBusiness()
        try await eventually("withdrawn while the business is served") { c.advertisement == nil }

        try await business.central.disconnect()
        try await c.events.contains("disconnected") { $0.disconnected == peer }
        try await eventually("advertised again") { c.advertisement != nil }
        #expect(stray.isConnected)
    }

    /// A central that connects the moment the advertisement is up, before the customer hears it registered, is
    /// seen all the same (the customer follows connections before it advertises): its handshake deadline runs.
    @Test func aConnectionAsTheAdvertisementGoesUpIsSeen() async throws {
        let address = "00:AA:01:01:00:09"
        let c = try await CustomerUnderTest.start({ $0.handshakeDeadline = .seconds(1) }, prepare: { f in
            f.bluetoothd.whenAdvertised { [bluetoothd = f.bluetoothd] in
                let application = try #require(bluetoothd.applications.values.first)
                _ = try await bluetoothd.connectCentral(address: address, to: application)
            }
        })
        defer { c.stop() }
        try await eventually("hung up at its handshake deadline") {
            c.f.bluetoothd.calls("Disconnect").map(\.path.rawValue) == ["/org/bluez/hci0/dev_00_AA_01_01_00_09"]
        }
        #expect(c.registrations() == 1)
    }

    @Test func afterBluetoothdRestartsTheCustomerIsFoundAndServesAgain() async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        let (business, first) = try await c.connectedBusiness()

        let restarted = try await c.f.restartBluetoothd()
        try await c.events.contains("disconnected") { $0.disconnected == first }
        // The adapter comes back unpowered: the customer powers it, and registers application and advertisement.
        try await eventually("registered again", within: .seconds(10)) {
            restarted.applications.count == 1 && restarted.advertisements.count == 1
        }
        #expect(restarted.calls("Set Powered").map(\.arguments) == [[.boolean(true)]])
        let (again, second) = try await c.connectedBusiness()
        #expect(second != first)
        withExtendedLifetime((business, again)) {}
    }

    @Test func afterAPowerCycleTheCustomerAdvertisesAgain() async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        let (business, first) = try await c.connectedBusiness()
        let registered = c.registrations()

        try await c.f.bluetoothd.power("hci0", false)
        try await c.events.contains("disconnected") { $0.disconnected == first }
        // The link's end is followed by an advertisement of its own; the power coming back, by another.
        try await eventually("advertised after the link ended") { c.registrations() == registered + 1 }
        try await c.f.bluetoothd.power("hci0", true)
        try await eventually("advertised after the power came back") { c.registrations() == registered + 2 }
        let (again, second) = try await c.connectedBusiness("00:AA:01:01:00:02")
        #expect(second != first)
        withExtendedLifetime((business, again)) {}
    }

    /// With bluetoothd's `Privacy`, a power cycle is what gives the advertisement a new address: the identity's
    /// replacement comes with one when the transport is asked to renew the address.
    @Test func theAddressIsRenewedWithTheIdentityWhenAskedTo() async throws {
        let c = try await CustomerUnderTest.start {
            $0.identityLifetime = .seconds(1)
            $0.renewsAddress = true
        }
        defer { c.stop() }
        let first = try #require(c.advertisement.flatMap(ephemeralID))
        try await eventually("a new identity advertised") {
            c.advertisement.flatMap(ephemeralID).map { $0 != first } ?? false
        }
        let calls = c.f.bluetoothd.calls.filter { ["Set Powered", "RegisterAdvertisement"].contains($0.member) }
        let powers = calls.filter { $0.member == "Set Powered" }.map(\.arguments)
        // Powered on at start, then off and on for each identity replaced (on a loaded machine, more than one may
        // have come due before this looks, and the last may be under way: off, and not yet on).
        let cycles = Array(powers.dropFirst())
        #expect(powers.first == [.boolean(true)] && cycles.count >= 2)
        #expect(cycles.enumerated().allSatisfy { $0.element == [.boolean($0.offset % 2 == 1)] })
        let poweredOff = try #require(calls.firstIndex { $0.member == "Set Powered" && $0.arguments == [.boolean(false)] })
        #expect(calls[poweredOff...].contains { $0.member == "RegisterAdvertisement" })
    }
}
