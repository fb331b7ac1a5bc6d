import BlepayBLE
import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// Customers that would hold up the business's connections or keep its slots.
@Suite(.timeLimit(.minutes(1))) struct BusinessHostileTests {
    /// Found first (devices are taken in path order), a device whose service discovery never ends is retried in
    /// its own task while the next customer is connected.
    @Test func aCustomerStallingServiceDiscoveryDoesNotHoldUpTheNext() async throws {
        let b = try await BusinessUnderTest.start { $0.servicesTimeout = .seconds(2) }
        defer { b.stop() }
        let stalled = try await b.customer(1) { _ in .stallDiscovery }
        let good = try await b.customer(2)

        _ = try await b.connected(good)
        #expect(!b.removed(stalled.device))
        // It gives up after three attempts of `servicesTimeout`, and forgets the device.
        try await eventually("the stalled device given up", within: .seconds(15)) { b.removed(stalled.device) }
        #expect(b.f.bluetoothd.calls("Connect").filter { $0.path == stalled.device }.count == 3)
    }

    /// The link's handshake time-out runs from the link's creation, right after the info read.
    @Test func aCustomerThatNeverAnswersTheHandshakeIsDropped() async throws {
        let b = try await BusinessUnderTest.start()
        defer { b.stop() }
        let silent = try await b.customer(1, answersHandshake: false)
        try await eventually("handshake 1 written") { !b.f.bluetoothd.calls("WriteValue").isEmpty }
        let written = ContinuousClock.now

        try await eventually("the customer dropped", within: .seconds(15)) { b.removed(silent.device) }
        // From the link's first second-long tick past the time-out; the write was seen a moment after the link began.
        let dropped = ContinuousClock.now - written
        #expect(dropped > Link.handshakeTimeout - .milliseconds(500) && dropped < Link.handshakeTimeout + .seconds(3))
        #expect(b.f.bluetoothd.calls("Disconnect").map(\.path) == [silent.device])
        #expect(!b.events.all.contains { $0.connected != nil })
    }

    /// With every connection taken, a waiting customer gets the place of the one heard from least recently, once
    /// that one has been silent for `idleTimeout`.
    @Test func theCustomerIdleLongestMakesRoomForAWaitingOne() async throws {
        let b = try await BusinessUnderTest.start {
            $0.maximumConnections = 2
            $0.idleTimeout = .seconds(1)
        }
        defer { b.stop() }
        let (first, second) = (try await b.customer(1), try await b.customer(2))
        let firstPeer = try await b.connected(first)
        let secondPeer = try await b.connected(second)
        // The first speaks after both are connected: the second is now the one heard from least recently.
        let cancel = CancelPayment(paymentID: .random(), reason: .userCancelled)
        first.send(.cancelPayment(cancel))
        try await b.events.contains("the first customer's message") { $0 == .received(firstPeer, .cancelPayment(cancel)) }

        let waiting = try await b.customer(3)
        _ = try await b.connected(waiting)
        #expect(b.events.all.contains(.disconnected(secondPeer)))
        #expect(!b.events.all.contains(.disconnected(firstPeer)))
        #expect(b.f.bluetoothd.calls("Disconnect").map(\.path) == [second.device])
    }
}
