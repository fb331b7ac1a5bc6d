import BlepayPayments
import BlepayProtocol
import BlueZ
import Crypto
import DBusKit
import Logging
import Synchronization

/// The business's side of blepay over BLE: finds customers by the service data they advertise, connects to them
/// one after another (at most `maximumConnections` at once), reads their info, subscribes to their notifications
/// and runs one `Link` per customer, the fragments to it sent as write requests.
///
/// BlueZ 5.66 matches a discovery filter's UUIDs against advertised UUID lists only, not service data, so
/// discovery is unfiltered and customers are picked from their service data here. A customer whose link ended
/// is removed from BlueZ, so that its next advertisement finds it afresh.
public final class BusinessTransport: PaymentTransport, Sendable {
    public struct Configuration: Sendable {
        /// The Noise key the certificate vouches for.
        public var staticKey: Curve25519.KeyAgreement.PrivateKey
        public var certificate: MerchantCertificate
        public var maximumConnections: Int
        /// How long discovery runs without finding a customer before it is started afresh.
        public var rescanInterval: Duration

        public init(
            staticKey: Curve25519.KeyAgreement.PrivateKey, certificate: MerchantCertificate, maximumConnections: Int = 8,
            rescanInterval: Duration = .seconds(10)
        ) {
            self.staticKey = staticKey
            self.certificate = certificate
            self.maximumConnections = maximumConnections
            self.rescanInterval = rescanInterval
        }
    }

    private let adapter: Adapter
    private let configuration: Configuration
    private let logger: Logger
    private let clock: @Sendable () -> Timestamp
    private let links: LinkTable<DBusObjectPath>
    /// Customers being connected to or connected, with the task that serves each.
    private let customers = Mutex<[DBusObjectPath: Task<Void, Never>]>([:])

    public var events: AsyncStream<TransportEvent> { links.events }

    public init(
        adapter: Adapter, configuration: Configuration, logger: Logger, clock: @escaping @Sendable () -> Timestamp
    ) {
        self.adapter = adapter
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        links = LinkTable(logger: logger)
    }

    /// Scans and connects until the calling task is cancelled; then disconnects every customer and ends `events`.
    /// `ready` is called once discovery runs.
    public func run(ready: @Sendable () -> Void = {}) async throws(BlueZError) {
        defer { links.finish() }
        try await adapter.setPowered(true)
        try await startDiscovery()
        logger.info("scanning for customers", metadata: ["adapter": "\(adapter.name)"])
        ready()
        let session = adapter.session.events()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in await connectLoop() }
            group.addTask { [self] in
                while (try? await Task.sleep(for: .seconds(1))) != nil { links.tick(at: .now) }
            }
            group.addTask { [self] in
                for await event in session {
                    switch event {
                    case .vanished:
                        logger.warning("bluetoothd went away")
                        for peer in links.peers { links.hangUp(peer) }
                    case .restarted:
                        logger.info("bluetoothd is back; scanning again")
                        try? await adapter.setPowered(true)
                        await resumeDiscovery()
                    case .changed(adapter.path, _, let values) where values["Powered"] == .boolean(true):
                        logger.info("the adapter is powered again; scanning again")
                        await resumeDiscovery()
                    default: break
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        for task in customers.withLock({ Array($0.values) }) {
            task.cancel()
            await task.value
        }
        try? await adapter.stopDiscovery()
    }

    public func send(_ message: Message, to peer: PeerID) {
        links.update(peer) { $0.send(message) }
    }

    public func disconnect(_ peer: PeerID) { links.hangUp(peer) }


    // MARK: Finding customers

    private func startDiscovery() async throws(BlueZError) {
        try await adapter.setDiscoveryFilter(DiscoveryFilter())
        try await adapter.startDiscovery()
    }

    /// Starts discovery again after a connection, a rescan or a recovery; a failure is logged, and the next rescan
    /// tries again.
    private func resumeDiscovery() async {
        do {
            try await startDiscovery()
        } catch {
            logger.warning("discovery did not start", metadata: ["error": "\(error)"])
        }
    }

    private var hasRoom: Bool { customers.withLock { $0.count } < configuration.maximumConnections }

    /// Connects to one customer at a time: connecting stops discovery, which resumes once the customer is
    /// served or has failed. While there is room for another customer and none has been found for
    /// `rescanInterval`, discovery is started afresh: some controllers report an advertiser once per scan, so a
    /// customer whose report came while its link was still being torn down would otherwise never be seen again.
    private func connectLoop() async {
        var lastFound = ContinuousClock.now
        while !Task.isCancelled {
            guard let device = nextCustomer() else {
                if hasRoom, ContinuousClock.now - lastFound > configuration.rescanInterval {
                    logger.debug("no customer found lately; scanning afresh")
                    try? await adapter.stopDiscovery()
                    await resumeDiscovery()
                    lastFound = .now
                }
                try? await Task.sleep(for: .milliseconds(250))
                continue
            }
            let connected = await connect(device)
            await resumeDiscovery()
            lastFound = .now
            if !connected { try? await Task.sleep(for: .milliseconds(500)) }
        }
    }

    /// A device advertising blepay's service data that is not being served, if there is room for one more.
    private func nextCustomer() -> Device? {
        guard hasRoom else { return nil }
        let busy = customers.withLock { Set($0.keys) }
        return adapter.devices.lazy.filter { !busy.contains($0.path) }.first { device in
                guard let data = device.serviceData[GattLayout.service],
                    let advertised = try? AdvertisementData(encoded: data)
                else { return false }
                return BlepayProtocol.versions.contains { $0 <= advertised.version }
            }
    }

    /// Connects, opens the link and starts serving the customer; false if that failed (the device is then
    /// forgotten, to be found again by its next advertisement).
    private func connect(_ device: Device) async -> Bool {
        do {
            let channel = try await Channel.open(device)
            let handshake = try BusinessHandshake(
                staticKey: configuration.staticKey, certificate: configuration.certificate, customerInfo: channel.info)
            let link = try Link(business: handshake, mtu: channel.mtu, at: .now)
            let (peer, outbox) = links.add(link, at: device.path)
            logger.info("customer connected", metadata: ["peer": "\(peer)", "mtu": "\(channel.mtu)"])
            let task = Task { [self] in
                let reason = await serve(peer, over: channel, outbox: outbox)
                links.remove(peer)
                logger.info("customer disconnected", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
                try? await adapter.removeDevice(device)
                customers.withLock { $0[device.path] = nil }
            }
            customers.withLock { $0[device.path] = task }
            links.update(peer) { $0.start() }
            return true
        } catch {
            logger.info("connecting to a customer failed", metadata: ["device": "\(device.path)", "error": "\(error)"])
            try? await adapter.removeDevice(device)
            customers.withLock { $0[device.path] = nil }
            return false
        }
    }

    /// Carries fragments both ways until the link closes, the customer disconnects, or the transport stops;
    /// returns why it ended.
    private func serve(_ peer: PeerID, over channel: Channel, outbox: AsyncStream<LinkTable<DBusObjectPath>.Outgoing>)
        async -> String
    {
        let reason = await withTaskGroup(of: String.self) { group in
            group.addTask {
                for await outgoing in outbox {
                    guard case .fragment(let fragment) = outgoing else { return "the link was closed" }
                    do {
                        try await channel.toCustomer.write(fragment, type: .request)
                    } catch {
                        return "a write failed: \(error)"
                    }
                }
                return "the link was closed"
            }
            group.addTask { [self] in
                for await fragment in channel.notifications {
                    links.update(peer) { $0.receive(fragment, at: .now, now: clock()) }
                }
                return "notifications ended"
            }
            group.addTask {
                for await connected in channel.states where !connected { return "the customer disconnected" }
                return "the transport stopped"
            }
            let first = await group.next() ?? "the transport stopped"
            group.cancelAll()
            return first
        }
        try? await channel.device.disconnect()
        return reason
    }
}

/// A connected customer's GATT side: its info, the characteristic fragments are written to, and the
/// notifications and connection states that come back.
private struct Channel: Sendable {
    let device: Device
    let info: [UInt8]
    let toCustomer: RemoteCharacteristic
    let mtu: Int
    let notifications: AsyncStream<[UInt8]>
    let states: AsyncStream<Bool>

    /// Service discovery is left to end by itself (BlueZ gives up after ATT's 30 s): bluetoothd 5.66 can crash when
    /// a discovery in progress is cancelled by `Disconnect`.
    static func open(_ device: Device) async throws(BlueZError) -> Channel {
        _ = try await device.connect(attempts: 3, timeout: .seconds(10), servicesTimeout: .seconds(35))
        let states = device.connectionStates()
        do {
            let info = try await device.characteristic(service: GattLayout.service, characteristic: GattLayout.info)
            let toCustomer = try await device.characteristic(
                service: GattLayout.service, characteristic: GattLayout.toCustomer)
            let toBusiness = try await device.characteristic(
                service: GattLayout.service, characteristic: GattLayout.toBusiness)
            let notifications = try await toBusiness.notifications()
            return Channel(
                device: device, info: try await info.read(), toCustomer: toCustomer,
                mtu: max(Framing.minimumMTU, toCustomer.mtu ?? Framing.minimumMTU), notifications: notifications,
                states: states)
        } catch {
            try? await device.disconnect()
            throw error
        }
    }
}
