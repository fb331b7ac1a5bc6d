import BlepayBLE
import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// Centrals that would keep a customer unseen, pin its identity, or have bluetoothd drop a write.
@Suite(.timeLimit(.minutes(1))) struct CustomerHostileTests {
    /// A central that never begins the handshake is hung up at the deadline, and the customer stays advertised
    /// meanwhile.
    @Test func aCentralThatNeverBeginsTheHandshakeIsHungUpAndLeavesTheCustomerAdvertised() async throws {
        let c = try await CustomerUnderTest.start { $0.handshakeDeadline = .seconds(1) }
        defer { c.stop() }
        let application = try #require(c.f.bluetoothd.applications.values.first)
        let registered = c.registrations()
        let connected = ContinuousClock.now
        let central = try await c.f.bluetoothd.connectCentral(address: "00:AA:01:01:00:09", to: application)

        try await eventually("the central hung up") { !central.isConnected }
        #expect(ContinuousClock.now - connected > .seconds(1))
        // The stand-in records a call once handled, just after the link has gone down.
        try await eventually("the Disconnect recorded") {
            c.f.bluetoothd.calls("Disconnect").map(\.path) == [central.device]
        }
        #expect(c.f.bluetoothd.calls("UnregisterAdvertisement").isEmpty)
        #expect(c.registrations() == registered && c.advertisement != nil)
    }

    @Test func anIdentityOverdueByItsGraceIsReplacedWhileABusinessStaysConnected() async throws {
        let began = ContinuousClock.now
        let c = try await CustomerUnderTest.start {
            // Long enough for a business to connect and complete its handshake on a loaded machine first.
            $0.identityLifetime = .seconds(5)
            $0.identityGrace = .seconds(2)
        }
        defer { c.stop() }
        // The identity the business connects under; none is replaced while a central is connected.
        let inUse = try #require(c.advertisement.flatMap(ephemeralID))
        let (business, peer) = try await c.connectedBusiness()

        try await c.events.contains("disconnected", within: .seconds(20)) { $0.disconnected == peer }
        #expect(ContinuousClock.now - began > .seconds(7))
        try await eventually("the Disconnect recorded") {
            c.f.bluetoothd.calls("Disconnect").map(\.path) == [business.central.device]
        }
        try await eventually("a new identity advertised") {
            c.advertisement.flatMap(ephemeralID).map { $0 != inUse } ?? false
        }
        // The address is left alone unless the transport is asked to renew it.
        #expect(c.f.bluetoothd.calls("Set Powered").map(\.arguments) == [[.boolean(true)]])
    }

    /// How the customer's link breaks while a central keeps writing.
    enum Breakage: Sendable, CaseIterable, CustomStringConvertible {
        /// A record of an unknown type.
        case protocolError
        /// The first fragment of a record whose rest never comes, retried (the customer ignores a repeat).
        case reassemblyTimeout

        var fragment: [UInt8] { self == .protocolError ? [0x80, 0x00, 0xFF] : [0x00, 0x00, 0x01] }
        /// Back to back while the link breaks at once, so that a write is nearly always on its way; spaced out
        /// while the customer waits 5 s for the rest of the record.
        var pause: Duration { self == .protocolError ? .zero : .milliseconds(20) }
        var description: String { self == .protocolError ? "protocol error" : "reassembly timeout" }
    }

    /// bluetoothd 5.66 drops a write still waiting for its answer when the link goes down, and was seen to crash:
    /// the customer answers every write before it disconnects, and refuses those that come after the link closed.
    @Test(arguments: Breakage.allCases)
    func everyWriteIsAnsweredBeforeTheCustomerHangsUp(_ breakage: Breakage) async throws {
        let c = try await CustomerUnderTest.start()
        defer { c.stop() }
        let application = try #require(c.f.bluetoothd.applications.values.first)
        let central = try await c.f.bluetoothd.connectCentral(address: "00:AA:01:01:00:07", to: application)
        let notices = try await central.subscribe(GattLayout.toBusiness)

        // As a business writes: each write once the previous one is answered, until one is refused.
        let refusal = try await within(.seconds(10), "a refused write") { () async throws -> String? in
            while true {
                do {
                    try await central.write(GattLayout.toCustomer, breakage.fragment)
                } catch let error as DBusError {
                    return error.name
                }
                try await Task.sleep(for: breakage.pause)
            }
        }
        #expect(refusal == "org.bluez.Error.NotPermitted")
        let notice = try await next("the customer's error notice", in: notices) { $0 }
        #expect(notice.dropFirst(2).first == 5)  // a plaintext error record

        try await eventually("the customer hangs up") { !central.isConnected }
        let events = c.f.bluetoothd.linkEvents
        let hangUp = try #require(events.firstIndex { event in
            if case .disconnectCalled(central.device, _) = event { true } else { false }
        })
        #expect(events[hangUp] == .disconnectCalled(central.device, unansweredWrites: 0))
        #expect(!events[hangUp...].contains { event in
            if case .writeAnswered(central.device, _) = event { true } else { false }
        })
    }
}
