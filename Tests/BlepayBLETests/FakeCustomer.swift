import BlepayPayments
import BlepayProtocol
import BlueZTestSupport
import Crypto
import DBusKit
import Synchronization
import TestSupport

/// A blepay customer on a remote device of the stand-in, for the business's transport: it advertises its service
/// data on hci0 and serves the protocol's GATT layout; the business's writes go into a real customer `Link`
/// (a fresh one for each connection) and its fragments come back as notifications.
final class FakeCustomer: Sendable {
    /// The stand-in the customer is on now (another after bluetoothd restarts).
    private final class Air: Sendable {
        let bluetoothd = Mutex<FakeBluetoothd?>(nil)
    }

    let address: String
    let device: DBusObjectPath
    let info: ProtocolInfo
    let peer: TestPeer
    private let answersHandshake: Bool
    private let staticKey = Curve25519.KeyAgreement.PrivateKey()
    private let trusted: TrustedLedgerKeys
    private let air = Air()

    /// `answersHandshake: false` is a customer that takes the business's writes and never answers.
    init(address: String, trusting trusted: TrustedLedgerKeys, capabilities: Capabilities = [.online],
        answersHandshake: Bool = true) throws
    {
        let device = try DBusObjectPath("/org/bluez/hci0/dev_\(address.replacingOccurrences(of: ":", with: "_"))")
        self.address = address
        self.device = device
        self.answersHandshake = answersHandshake
        self.trusted = trusted
        info = try ProtocolInfo(versions: [1], capabilities: capabilities, maximumMessageSize: 4000)
        let air = air
        peer = TestPeer(
            transmit: { fragment in
                guard let bluetoothd = air.bluetoothd.withLock({ $0 }),
                    let path = bluetoothd.characteristic(GattLayout.toBusiness, of: device)
                else { return }
                try await bluetoothd.notify(path, fragment)
            },
            hangUp: { try await air.bluetoothd.withLock { $0 }?.loseLink(device) })
    }

    var events: Recorder<TestPeer.Event> { peer.events }

    /// Appears on `bluetoothd`'s hci0 advertising blepay's service data; `connectOutcome` is what its Connect does.
    func advertise(
        on bluetoothd: FakeBluetoothd, connectOutcome: (@Sendable (Int) -> FakeBluetoothd.ConnectOutcome)? = nil
    ) async throws {
        air.bluetoothd.withLock { $0 = bluetoothd }
        peer.open(nil)
        let advertised = AdvertisementData(
            version: 1, capabilities: info.capabilities,
            ephemeralID: try FixedBytes((0..<8).map { _ in .random(in: 0...255) }))
        let (peer, info, staticKey, trusted) = (peer, info, staticKey, trusted)
        // Before the device appears: the business may connect at once.
        bluetoothd.observeLink(device) { up in
            guard up else { return }
            let handshake = CustomerHandshake(staticKey: staticKey, info: info, trusting: trusted)
            if let link = try? Link(customer: handshake, mtu: 517, at: .now) { peer.open(link) }
        }
        try await bluetoothd.addDevice(
            "hci0", address, serviceData: [GattLayout.service: advertised.encoded], services: services(),
            connectOutcome: connectOutcome)
    }

    func send(_ message: Message) { peer.send(message) }

    /// The customer ends the link from its side.
    func disconnect() async throws {
        try await air.bluetoothd.withLock { $0 }?.loseLink(device)
    }

    private func services() -> [FakeBluetoothd.RemoteService] {
        let (peer, answers) = (peer, answersHandshake)
        return [
            .init(uuid: GattLayout.service, characteristics: [
                .init(uuid: GattLayout.toCustomer, flags: ["write"]) { fragment in
                    if answers { peer.receive(fragment) }
                },
                .init(uuid: GattLayout.toBusiness, flags: ["notify"]),
                .init(uuid: GattLayout.info, value: info.encoded, flags: ["read"]),
            ])
        ]
    }
}
