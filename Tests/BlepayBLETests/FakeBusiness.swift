import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import TestSupport

/// A blepay business as a remote central of the stand-in, for the customer's transport: it connects to the
/// customer's registered application, reads the info, subscribes to notifications, and runs a real business
/// `Link` over its writes.
final class FakeBusiness: Sendable {
    let central: Central
    let peer: TestPeer
    private let listener: Task<Void, Never>

    var events: Recorder<TestPeer.Event> { peer.events }

    /// `writingTo` is the characteristic its fragments go to: write requests (1001) or commands (1004).
    init(
        on bluetoothd: FakeBluetoothd, address: String, merchant: Merchant, writingTo frames: String = GattLayout.toCustomer
    ) async throws {
        try await eventually("the customer's application") { !bluetoothd.applications.isEmpty }
        guard let application = bluetoothd.applications.values.first else { throw TimedOut(what: "an application") }
        let central = try await bluetoothd.connectCentral(address: address, to: application)
        let info = try await central.read(GattLayout.info)
        let notifications = try await central.subscribe(GattLayout.toBusiness)
        let peer = TestPeer(
            transmit: { try await central.write(frames, $0) }, hangUp: { try await central.disconnect() })
        peer.open(
            try Link(
                business: BusinessHandshake(
                    staticKey: merchant.staticKey, certificate: merchant.certificate, customerInfo: info),
                mtu: Int(central.mtu), at: .now))
        listener = Task {
            for await fragment in notifications { peer.receive(fragment) }
        }
        self.central = central
        self.peer = peer
        peer.start()
    }

    deinit { listener.cancel() }
}
