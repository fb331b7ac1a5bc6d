import BlepayPayments
import BlepayProtocol
import BlueZ
import Crypto
import DBusKit
import L2CAP
import Logging
import Synchronization

/// The business's side of blepay over BLE: finds customers by the service data they advertise, connects to them
/// (one connection attempt at a time, at most `maximumConnections` customers at once), reads their info and runs
/// one `Link` per customer: its fragments as SDUs over an L2CAP channel when the customer's info names a PSM and the
/// channel opens (`docs/protocol.md` §9); else over GATT, through the sockets bluetoothd hands out for write commands
/// and notifications, or, where it offers none, as write requests and notification signals on D-Bus.
///
/// BlueZ 5.66 matches a discovery filter's UUIDs against advertised UUID lists only, not service data, so
/// discovery is unfiltered and customers are picked from their service data here. A customer whose link ended
/// is removed from BlueZ, so that its next advertisement finds it afresh.
public final class BusinessTransport: PaymentTransport, Sendable {
    public struct Configuration: Sendable {
        /// The Noise key the certificate vouches for.
        public var staticKey: Curve25519.KeyAgreement.PrivateKey
        /// Read at each new handshake: a renewed certificate is shown from the next customer on.
        public var certificate: PresentedCertificate
        /// Customers connected (or being connected) at once.
        public var maximumConnections: Int
        /// How long discovery runs without finding a customer before it is first started afresh; each further
        /// restart waits twice as long, up to `Rescan.limit`, until a customer is served again.
        public var rescanInterval: Duration
        /// Bounds each `Connect` call, and how long connecting waits for one customer's link to come up before it
        /// goes on to the next customer.
        public var connectTimeout: Duration
        /// Bounds service discovery, per connection attempt. Past ATT's 30 s, so that bluetoothd gives up first:
        /// 5.66 could crash when a discovery in progress was cancelled by `Disconnect`.
        public var servicesTimeout: Duration
        /// With every connection taken and another customer waiting, the customer heard from least recently is
        /// disconnected to make room, if that was at least this long ago. A minute leaves a customer who is
        /// looking at a request (open for 2 minutes by default) its place unless someone else is waiting.
        public var idleTimeout: Duration
        /// Whether to open an L2CAP channel to a customer whose info names a PSM; GATT otherwise.
        public var l2cap: Bool
        /// How long the channel may take to open before the session goes over GATT instead.
        public var channelTimeout: Duration

        public init(
            staticKey: Curve25519.KeyAgreement.PrivateKey, certificate: PresentedCertificate, maximumConnections: Int = 20,
            rescanInterval: Duration = .seconds(10), connectTimeout: Duration = .seconds(10),
            servicesTimeout: Duration = .seconds(35), idleTimeout: Duration = .seconds(60), l2cap: Bool = true,
            channelTimeout: Duration = .seconds(5)
        ) {
            self.staticKey = staticKey
            self.certificate = certificate
            self.maximumConnections = maximumConnections
            self.rescanInterval = rescanInterval
            self.connectTimeout = connectTimeout
            self.servicesTimeout = servicesTimeout
            self.idleTimeout = idleTimeout
            self.l2cap = l2cap
            self.channelTimeout = channelTimeout
        }
    }

    private let adapter: Adapter
    private let configuration: Configuration
    private let logger: Logger
    private let clock: @Sendable () -> Timestamp
    private let links: LinkTable<DBusObjectPath>
    /// Customers being connected to or connected, with the task that serves each.
    private let customers = Mutex<[DBusObjectPath: Task<Void, Never>]>([:])
    /// Rung when a customer may be waiting or room was freed (bluetoothd's device events, a customer's service
    /// ending): the connect loop sleeps on it.
    private let arrivals = Wakeup()
    /// When a customer's service last ended: activity that puts off the connect loop's next rescan.
    private let serviceEnded = Mutex<ContinuousClock.Instant?>(nil)

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
            group.addTask { [links] in
                await links.wakeup.keepTime(deadline: { links.nextDeadline }, fire: { links.tick(at: .now) })
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
                    case .added, .changed(_, "org.bluez.Device1", _):
                        // A device appeared, or one changed its service data or connection.
                        arrivals.signal()
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
            // Cancelled, the call was given up by a stop: nothing failed.
            if !Task.isCancelled { logger.warning("discovery did not start", metadata: ["error": "\(error)"]) }
        }
    }

    private var hasRoom: Bool { customers.withLock { $0.count } < configuration.maximumConnections }

    /// Connects to one customer at a time: connecting stops discovery, which resumes once the customer's link is
    /// up or its attempt failed. With no room left, the customer heard from least recently may be disconnected to
    /// make room (`idleTimeout`). While there is room for another customer, discovery is started afresh on the
    /// schedule `Rescan` keeps. Between looks the loop sleeps until bluetoothd reports a device, a customer's
    /// service ends, the quietest customer may be disconnected, or the next rescan is due: never on a fixed poll.
    private func connectLoop() async {
        var rescan = Rescan(first: configuration.rescanInterval, at: .now)
        while !Task.isCancelled {
            if let ended = serviceEnded.withLock({ $0.take() }) { rescan.activity(at: ended) }
            let waiting = waitingCustomer()
            guard let device = waiting, hasRoom else {
                var wake: ContinuousClock.Instant?
                if waiting != nil {
                    makeRoom()
                    wake = links.quietAt(silentFor: configuration.idleTimeout)
                } else if hasRoom {
                    if ContinuousClock.now >= rescan.due {
                        logger.debug("no customer found lately; scanning afresh")
                        try? await adapter.stopDiscovery()
                        await resumeDiscovery()
                        rescan.restarted(at: .now)
                    }
                    wake = rescan.due
                }
                await arrivals.wait(until: wake)
                continue
            }
            let linked = await connect(device)
            await resumeDiscovery()
            rescan.activity(at: .now)
            if !linked { try? await Task.sleep(for: .milliseconds(500)) }
        }
    }

    /// A device advertising blepay's service data that is not being served.
    private func waitingCustomer() -> Device? {
        let busy = customers.withLock { Set($0.keys) }
        return adapter.devices.lazy.filter { !busy.contains($0.path) }.first { device in
            guard let data = device.serviceData[GattLayout.service],
                let advertised = try? AdvertisementData(encoded: data)
            else { return false }
            return BlepayProtocol.versions.contains { $0 <= advertised.version }
        }
    }

    /// Disconnects the customer heard from least recently, if that was at least `idleTimeout` ago.
    private func makeRoom() {
        guard let peer = links.quietest(silentFor: configuration.idleTimeout, at: .now) else { return }
        logger.info("disconnecting the customer idle longest to make room for another", metadata: ["peer": "\(peer)"])
        links.hangUp(peer)
    }

    /// Starts serving the customer in a task of its own, then waits until its link is up, its setup ended, or
    /// `connectTimeout` passed: one connection attempt at a time (a controller creates one LE connection at a
    /// time), while service discovery, the info read and the subscription, which a stalled device can draw out
    /// to minutes, go on in the customer's task. False if the setup failed meanwhile.
    ///
    /// BlueZ 5.66 does not always announce `Connected` on the central's device object (see `Device.connect`);
    /// then this waits for the setup or `connectTimeout`. The mirror is looked at, not subscribed to: a BlueZ
    /// subscription ended while bluetoothd's signals are handed out can deadlock `BlueZSession`, which hands them
    /// out under the lock that ending a subscription takes.
    private func connect(_ device: Device) async -> Bool {
        let (setup, ended) = AsyncStream<Bool>.makeStream()
        customers.withLock { customers in
            // Inserted under the lock that the task's end takes to remove it.
            customers[device.path] = Task { [self] in
                await serve(device, setupEnded: ended)
                serviceEnded.withLock { $0 = .now }
                arrivals.signal()
            }
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await succeeded in setup { return succeeded }
                return true
            }
            group.addTask { [arrivals] in
                // bluetoothd's `Connected` change rings `arrivals` (the connect loop waits here meanwhile).
                while !device.isConnected, !Task.isCancelled { await arrivals.wait(until: nil) }
                return true
            }
            group.addTask { [configuration] in
                try? await Task.sleep(for: configuration.connectTimeout)
                return true
            }
            defer { group.cancelAll() }
            return await group.next() ?? true
        }
    }

    /// Serves one customer: connects, opens the link, and carries fragments until the link ends; then the device
    /// is removed from BlueZ, to be found again by its next advertisement. `setupEnded` says whether the link came up.
    private func serve(_ device: Device, setupEnded: AsyncStream<Bool>.Continuation) async {
        defer { customers.withLock { $0[device.path] = nil } }
        do {
            let channel = try await Channel.open(
                device, connectTimeout: configuration.connectTimeout, servicesTimeout: configuration.servicesTimeout)
            let handshake = try BusinessHandshake(
                staticKey: configuration.staticKey, certificate: configuration.certificate.current, customerInfo: channel.info)
            // One transport for the whole session, chosen before handshake 1 (docs/protocol.md §9): the L2CAP
            // channel, else GATT through bluetoothd's sockets, else GATT through its D-Bus calls and signals.
            let transport: Transport
            if let l2cap = await openChannel(to: device, psm: handshake.customerInfo.channelPSM) {
                let link = try Link(business: handshake, channelMTU: l2cap.sendMTU, at: .now)
                transport = .packets(l2cap.packets, name: "l2cap", link: link)
            } else if let sockets = await channel.sockets(logger: logger) {
                let link = try Link(business: handshake, mtu: sockets.mtu, at: .now)
                transport = .packets(sockets.packets, name: "gatt-sockets", link: link)
            } else {
                let link = try Link(business: handshake, mtu: channel.mtu, at: .now)
                transport = .gatt(try await channel.subscribe(), link: link)
            }
            // The handshake's 10 s run from here: a customer that does not answer is dropped by `tick`.
            setupEnded.yield(true)
            setupEnded.finish()
            let (peer, outbox) = links.add(transport.link, at: device.path)
            logger.info(
                "customer connected",
                metadata: [
                    "peer": "\(peer)", "device": "\(device.path)", "transport": "\(transport.name)",
                    "mtu": "\(transport.sendMTU ?? channel.mtu)",
                ])
            links.update(peer) { $0.start() }
            let reason: String
            switch transport {
            case .packets(let packets, _, _):
                reason = await PacketCarrier.carry(peer, of: links, over: packets, outbox: outbox, clock: clock)
                try? await device.disconnect()
            case .gatt(let notifications, _):
                reason = await carry(peer, over: channel, notifications: notifications, outbox: outbox)
            }
            links.remove(peer)
            logger.info("customer disconnected", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
        } catch {
            setupEnded.yield(false)
            setupEnded.finish()
            logger.info("connecting to a customer failed", metadata: ["device": "\(device.path)", "error": "\(error)"])
        }
        try? await adapter.removeDevice(device)
    }

    /// The L2CAP channel to the PSM the customer's info names, if it opens within `channelTimeout`; nil to use GATT
    /// (switched off, no PSM named, or the channel failed).
    private func openChannel(to device: Device, psm: UInt16?) async -> L2CAPChannel? {
        guard configuration.l2cap, let psm else { return nil }
        guard let local = adapter.address.flatMap({ L2CAPAddress($0, bluezType: adapter.addressType ?? "public") }),
            let address = device.address, let remote = L2CAPAddress(address, bluezType: device.addressType ?? "")
        else {
            logger.info("no L2CAP channel: an address is unknown; using GATT", metadata: ["device": "\(device.path)"])
            return nil
        }
        do {
            return try await L2CAPChannel.connect(
                from: local, to: remote, psm: psm, receiveMTU: PacketCarrier.receiveMTU,
                timeout: configuration.channelTimeout)
        } catch {
            logger.info(
                "the L2CAP channel did not open; using GATT",
                metadata: ["device": "\(device.path)", "psm": "\(psm)", "error": "\(error)"])
            return nil
        }
    }

    /// Carries fragments both ways until the link closes, the customer disconnects, or the transport stops;
    /// returns why it ended.
    private func carry(
        _ peer: PeerID, over channel: Channel, notifications: AsyncStream<[UInt8]>,
        outbox: AsyncStream<LinkTable<DBusObjectPath>.Outgoing>
    ) async -> String {
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
                for await fragment in notifications {
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

/// How a session's fragments travel, with the link that frames them for it.
private enum Transport {
    /// One packet a fragment: an L2CAP channel, or bluetoothd's GATT sockets.
    case packets(PacketChannel, name: String, link: Link)
    /// Write requests and notification signals through bluetoothd's D-Bus interface.
    case gatt(AsyncStream<[UInt8]>, link: Link)

    var link: Link {
        switch self {
        case .packets(_, _, let link), .gatt(_, let link): link
        }
    }
    var name: String {
        switch self {
        case .packets(_, let name, _): name
        case .gatt: "gatt"
        }
    }
    /// The largest packet sent; nil over D-Bus.
    var sendMTU: Int? {
        if case .packets(let packets, _, _) = self { packets.sendMTU } else { nil }
    }
}

/// A connected customer's GATT side: its info, the characteristics fragments are written to and notified from,
/// and its connection states.
private struct Channel: Sendable {
    let device: Device
    let info: [UInt8]
    let toCustomer: RemoteCharacteristic
    /// The write-without-response twin of `toCustomer`; nil from a customer that predates it.
    let toCustomerCommands: RemoteCharacteristic?
    let toBusiness: RemoteCharacteristic
    let mtu: Int
    let states: AsyncStream<Bool>

    /// Service discovery is left to end by itself (`servicesTimeout` is past ATT's 30 s): bluetoothd 5.66 can
    /// crash when a discovery in progress is cancelled by `Disconnect`.
    static func open(_ device: Device, connectTimeout: Duration, servicesTimeout: Duration)
        async throws(BlueZError) -> Channel
    {
        _ = try await device.connect(attempts: 3, timeout: connectTimeout, servicesTimeout: servicesTimeout)
        let states = device.connectionStates()
        do {
            let info = try await device.characteristic(service: GattLayout.service, characteristic: GattLayout.info)
            let toCustomer = try await device.characteristic(
                service: GattLayout.service, characteristic: GattLayout.toCustomer)
            let toBusiness = try await device.characteristic(
                service: GattLayout.service, characteristic: GattLayout.toBusiness)
            // Services are resolved: what is not there now is not served.
            let toCustomerCommands = try? await device.characteristic(
                service: GattLayout.service, characteristic: GattLayout.toCustomerCommands, timeout: .zero)
            return Channel(
                device: device, info: try await info.read(), toCustomer: toCustomer,
                toCustomerCommands: toCustomerCommands, toBusiness: toBusiness,
                mtu: max(Framing.minimumMTU, toCustomer.mtu ?? Framing.minimumMTU), states: states)
        } catch {
            try? await device.disconnect()
            throw error
        }
    }

    /// The customer's notifications as `PropertiesChanged` signals (`StartNotify`).
    func subscribe() async throws(BlueZError) -> AsyncStream<[UInt8]> {
        do {
            return try await toBusiness.notifications()
        } catch {
            try? await device.disconnect()
            throw error
        }
    }

    /// Sockets from bluetoothd for the session's fragments, bypassing D-Bus: write commands to
    /// `toCustomerCommands` (`AcquireWrite`) and notifications from `toBusiness` (`AcquireNotify`); with the ATT MTU
    /// the link frames for. Nil if the customer or bluetoothd offers none, or acquiring failed.
    func sockets(logger: Logger) async -> (packets: PacketChannel, mtu: Int)? {
        guard let toCustomerCommands else { return nil }
        do {
            let sockets = try await RemoteCharacteristic.acquireSockets(
                writingTo: toCustomerCommands, notifiedBy: toBusiness)
            let mtu = max(Framing.minimumMTU, sockets.mtu)
            let packets = try PacketChannel(
                reading: sockets.notify, writing: sockets.write, receiveMTU: mtu, sendMTU: mtu - 3,
                peer: "\(device.path)", threadName: "blepay-gatt")
            return (packets, mtu)
        } catch {
            logger.info(
                "no GATT sockets from bluetoothd; using its D-Bus calls",
                metadata: ["device": "\(device.path)", "error": "\(error)"])
            return nil
        }
    }
}
