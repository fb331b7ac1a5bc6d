import BlepayPayments
import BlepayProtocol
import BlueZ
import Crypto
import DBusKit
import L2CAP
import Logging
import Synchronization

/// The customer's side of blepay over BLE (`docs/protocol.md` §1–3, §7, §9): serves the GATT service, advertises its
/// service data, and runs one `Link` per business connection, the fragments to it sent as notifications, or as the
/// SDUs of the L2CAP channel the business opened to the PSM the info characteristic names.
///
/// One business at a time: BlueZ 5.66 sends a notification to every subscribed central, so while a business is
/// served a second one's writes are refused (`NotPermitted`) and it finds no advertisement to connect to. A central
/// that has not begun the handshake leaves the customer advertised: it may be anything that connects to devices.
public final class CustomerTransport: PaymentTransport, Sendable {
    public struct Configuration: Sendable {
        /// Ledger keys whose merchant certificates are accepted.
        public var trustedLedgerKeys: TrustedLedgerKeys
        /// How long one advertising identity (ephemeral id and Noise static key) is used: it is replaced once this
        /// has passed and no central is connected.
        public var identityLifetime: Duration
        /// How long past `identityLifetime` connected centrals may keep the identity in use: they are then hung up
        /// and it is replaced, so that a business staying connected cannot hold on to one identity.
        public var identityGrace: Duration
        /// How long a central may stay connected without completing the handshake; it is then hung up, so that it
        /// holds neither the connection nor the identity (replaced only while no central is connected). The default
        /// covers the virtual rig's worst case: service discovery alone took up to ~35 s under emulation before the
        /// business wrote handshake 1, then the info read, the subscription and the handshake's own 10 s.
        public var handshakeDeadline: Duration
        /// Whether to power the adapter off and on when the identity is replaced, so that the BLE address changes
        /// with it. Only for bluetoothd running with `Privacy` (main.conf): the kernel then advertises under a
        /// resolvable private address that it renews on its own 15-minute timer and when the adapter powers up,
        /// but not when the advertisement is registered afresh (seen in the virtual rig, BlueZ 5.66 on Linux 6.1).
        /// Without `Privacy` the address is the adapter's own and no power cycle changes it.
        public var renewsAddress: Bool
        /// Whether to accept L2CAP channels (and name their PSM in the info characteristic); GATT is served
        /// either way.
        public var l2cap: Bool

        public init(
            trustedLedgerKeys: TrustedLedgerKeys, identityLifetime: Duration = .seconds(900),
            identityGrace: Duration = .seconds(300), handshakeDeadline: Duration = .seconds(60),
            renewsAddress: Bool = false, l2cap: Bool = true
        ) {
            self.trustedLedgerKeys = trustedLedgerKeys
            self.identityLifetime = identityLifetime
            self.identityGrace = identityGrace
            self.handshakeDeadline = handshakeDeadline
            self.renewsAddress = renewsAddress
            self.l2cap = l2cap
        }
    }

    /// The advertisement registered; `data` is nil once BlueZ may have dropped it (bluetoothd restarted, the power
    /// cycled), so that it is registered again.
    private struct Advertised {
        let handle: AdvertisementHandle
        var data: AdvertisementData?
    }

    /// What the customer shows nearby businesses; replaced together, never derived from who the customer is.
    private struct Identity {
        var staticKey = Curve25519.KeyAgreement.PrivateKey()
        var ephemeralID = (0..<8).map { _ in UInt8.random(in: .min ... .max) }
        var since = ContinuousClock.now
    }

    /// How long a central being hung up must have been quiet before it is disconnected. BlueZ 5.66 must not see
    /// the Disconnect while it waits for the answer to a write: it drops the write, times it out (err -110) and
    /// was seen to crash. Writes it already passed on are answered first (the answers leave on the connection the
    /// Disconnect leaves on, so they arrive before it); a write the business sent as the previous one was
    /// answered may still be on its way, and gets here within one write round trip (p95 85 ms in the rig).
    static let quietPeriod: Duration = .milliseconds(500)
    /// The longest a hang-up waits for a central to go quiet, against one that keeps writing.
    static let drainLimit: Duration = .seconds(3)

    private let adapter: Adapter
    private let configuration: Configuration
    private let logger: Logger
    private let clock: @Sendable () -> Timestamp
    private let links: LinkTable<DBusObjectPath>
    private let centrals = Centrals()
    private let identity = Mutex(Identity())
    private let capabilities: Mutex<Capabilities>
    private let application = Mutex<GattApplicationHandle?>(nil)
    private let advertisement = Mutex<Advertised?>(nil)
    /// Where businesses open L2CAP channels, while `run` runs; nil without one.
    private let listener = Mutex<L2CAPListener?>(nil)
    /// Asks `run` to bring the advertisement in line, one request at a time: withdrawn while a business is served,
    /// else registered with what the customer shows now unless BlueZ holds that already.
    private let readvertise = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    /// The identity was replaced and the address is to follow before the next advertisement (`renewsAddress`).
    private let addressDue = Mutex(false)

    public var events: AsyncStream<TransportEvent> { links.events }

    public init(
        adapter: Adapter, configuration: Configuration, capabilities: Capabilities, logger: Logger,
        clock: @escaping @Sendable () -> Timestamp
    ) {
        self.adapter = adapter
        self.configuration = configuration
        self.capabilities = Mutex(capabilities)
        self.logger = logger
        self.clock = clock
        links = LinkTable(logger: logger)
    }

    /// Serves the GATT service and advertises until the calling task is cancelled; then stops advertising,
    /// hangs up every central, unregisters, and ends `events`. `ready` is called once both are registered.
    public func run(ready: @Sendable () -> Void = {}) async throws(BlueZError) {
        defer { links.finish() }
        try await adapter.setPowered(true)
        // Followed before the advertisement goes up: a business may connect the moment it does.
        let connections = adapter.connectionEvents()
        let listener = listen()
        defer { listener?.close() }
        let handle = try await adapter.serve(gattApplication())
        application.withLock { $0 = handle }
        do {
            try await advertise()
        } catch {
            await handle.stop()
            throw error
        }
        logger.info("serving and advertising", metadata: ["adapter": "\(adapter.name)"])
        ready()
        // Only what `recover` acts on: the radio's other events (devices seen, their signal strength) wake no task.
        let adapterPath = adapter.path
        let bluetoothd = adapter.session.changes { event in Recovery(event, adapter: adapterPath) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await event in connections {
                    if event.connected {
                        centrals.connected(event.device.path)
                        links.wakeup.signal()  // its handshake deadline runs from now
                    } else {
                        linkWentDown(event.device.path)
                    }
                }
            }
            group.addTask { [self] in
                for await event in bluetoothd { await recover(event) }
            }
            group.addTask { [self] in
                await links.wakeup.keepTime(deadline: { nextDeadline() }, fire: { tick() })
            }
            group.addTask { [self] in
                for await _ in readvertise.stream {
                    guard links.isEmpty else {
                        await withdraw()
                        continue
                    }
                    do {
                        if addressDue.withLock({ due in defer { due = false }; return due }) { try await renewAddress() }
                        try await advertise()
                    } catch {
                        // Cancelled, the call was given up by a stop: nothing failed.
                        if !Task.isCancelled { logger.warning("advertising failed", metadata: ["error": "\(error)"]) }
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        await withdraw()
        // In a task of their own: this one is cancelled, and hanging up waits and calls bluetoothd.
        let devices = centrals.devices
        await Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                for device in devices { group.addTask { await self.hangUp(device) } }
            }
        }.value
        await handle.stop()
        application.withLock { $0 = nil }
    }

    public func send(_ message: Message, to peer: PeerID) {
        links.update(peer) { $0.send(message) }
    }

    public func disconnect(_ peer: PeerID) { links.hangUp(peer) }

    /// What the advertisement and info characteristic say from now on (online, holding a pre-authorization).
    public func setCapabilities(_ new: Capabilities) {
        guard capabilities.withLock({ old in defer { old = new }; return old != new }) else { return }
        readvertise.continuation.yield()
    }

    // MARK: GATT

    private func gattApplication() -> GattApplication {
        GattApplication(services: [
            GattService(
                uuid: GattLayout.service,
                characteristics: [
                    GattCharacteristic(
                        uuid: GattLayout.toCustomer, flags: ["write"],
                        onOrderedWrite: { [self] (value, request) throws(BlueZError) in
                            try received(value, request, transport: "gatt")
                        }),
                    GattCharacteristic(
                        uuid: GattLayout.toCustomerCommands, flags: ["write-without-response"],
                        onOrderedWrite: { [self] (value, request) throws(BlueZError) in
                            try received(value, request, transport: "gatt-commands")
                        }),
                    GattCharacteristic(uuid: GattLayout.toBusiness, flags: ["notify"]),
                    GattCharacteristic(
                        uuid: GattLayout.info, flags: ["read"],
                        onRead: { [self] _ throws(BlueZError) in try info().encoded }),
                ])
        ])
    }

    private func info() throws(BlueZError) -> ProtocolInfo {
        do throws(ProtocolError) {
            return try ProtocolInfo(
                versions: BlepayProtocol.versions.sorted(by: >), capabilities: capabilities.withLock { $0 },
                maximumMessageSize: UInt16(clamping: SecureSession.maximumMessageSize),
                channelPSM: listener.withLock { $0?.psm })
        } catch {
            throw BlueZError(.failed, "no protocol info: \(error)")
        }
    }

    /// A business's write, on the D-Bus thread in the order writes came: answered once its fragment is queued for the
    /// link (the handshake's crypto it may start does not hold up the answer, nor the D-Bus thread), or refused when
    /// its link is closed or closing. `transport` names the characteristic, for the log: write requests or commands.
    private func received(_ fragment: [UInt8], _ request: GattRequest, transport: String) throws(BlueZError) {
        guard let device = request.device else { throw BlueZError(.notPermitted, "a write that names no device") }
        try centrals.write(device) { () throws(BlueZError) in
            let mtu = request.mtu ?? Framing.minimumMTU
            let peer: PeerID
            if let known = links.peer(at: device) { peer = known } else {
                peer = try open(device, mtu: mtu, transport: transport)
            }
            let clock = self.clock
            let queued = links.queue(peer) { link in link.setMTU(mtu) + link.receive(fragment, at: .now, now: clock()) }
            guard queued else { throw BlueZError(.notPermitted, "the link is closed") }
        }
    }

    /// A new business's first write: its link, and the task that sends its fragments as notifications and hangs
    /// it up when the link closes.
    private func open(_ device: DBusObjectPath, mtu: Int, transport: String) throws(BlueZError) -> PeerID {
        guard links.isEmpty else { throw BlueZError(.notPermitted, "another business is connected") }
        let staticKey = identity.withLock { $0.staticKey }
        let handshake = CustomerHandshake(
            staticKey: staticKey, info: try info(), trusting: configuration.trustedLedgerKeys)
        let link: Link
        do throws(ProtocolError) {
            link = try Link(customer: handshake, mtu: mtu, at: .now)
        } catch {
            throw BlueZError(.invalidArguments, error.description)
        }
        let (peer, outbox) = links.add(link, at: device)
        readvertise.continuation.yield()
        logger.info("business connected", metadata: ["peer": "\(peer)", "transport": "\(transport)", "mtu": "\(mtu)"])
        Task { [self] in
            for await outgoing in outbox {
                guard case .fragment(let fragment) = outgoing, await notify(fragment) else { break }
            }
            await hangUp(device)
        }
        return peer
    }

    private func notify(_ fragment: [UInt8]) async -> Bool {
        guard let app = application.withLock({ $0 }) else { return false }
        do {
            try await app.notify(GattLayout.toBusiness, fragment)
            return true
        } catch {
            logger.warning("a notification failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    // MARK: L2CAP

    /// Listens for L2CAP channels on the adapter's address at a PSM the kernel picks, and accepts them until the
    /// listener closes; nil (GATT only) when switched off or when the kernel has no Bluetooth sockets.
    private func listen() -> L2CAPListener? {
        guard configuration.l2cap else { return nil }
        guard let address = adapter.address, let local = L2CAPAddress(address, bluezType: adapter.addressType ?? "public")
        else {
            logger.info("no L2CAP channel: the adapter has no LE address", metadata: ["adapter": "\(adapter.name)"])
            return nil
        }
        let listener: L2CAPListener
        do {
            listener = try L2CAPListener(on: local, receiveMTU: PacketCarrier.receiveMTU)
        } catch {
            logger.info("no L2CAP channel; serving GATT only", metadata: ["error": "\(error)"])
            return nil
        }
        self.listener.withLock { $0 = listener }
        logger.info("accepting L2CAP channels", metadata: ["address": "\(local)", "psm": "\(listener.psm)"])
        Task { [self] in
            for await channel in listener.channels { accept(channel) }
            self.listener.withLock { $0 = nil }
        }
        return listener
    }

    /// A business's channel: taken as its connection's link if it comes from a connected central that has no link
    /// yet (and no other business is connected), else closed. The link runs until either end closes the channel;
    /// then the central is hung up as after a GATT link.
    private func accept(_ channel: L2CAPChannel) {
        let device = adapter.device(address: channel.peer.address)
        guard let device, device.isConnected || centrals.devices.contains(device.path) else {
            logger.info("refusing an L2CAP channel from a device not connected", metadata: ["address": "\(channel.peer)"])
            channel.close()
            return
        }
        guard links.isEmpty else {
            logger.info("refusing an L2CAP channel: a business is connected", metadata: ["address": "\(channel.peer)"])
            channel.close()
            return
        }
        centrals.connected(device.path)
        let link: Link
        do throws(BlueZError) {
            let handshake = CustomerHandshake(
                staticKey: identity.withLock { $0.staticKey }, info: try info(),
                trusting: configuration.trustedLedgerKeys)
            do throws(ProtocolError) {
                link = try Link(customer: handshake, channelMTU: channel.sendMTU, at: .now)
            } catch {
                throw BlueZError(.invalidArguments, error.description)
            }
        } catch {
            logger.warning("refusing an L2CAP channel", metadata: ["error": "\(error)"])
            channel.close()
            return
        }
        let (peer, outbox) = links.add(link, at: device.path)
        readvertise.continuation.yield()
        logger.info(
            "business connected",
            metadata: ["peer": "\(peer)", "transport": "l2cap", "mtu": "\(channel.sendMTU)", "address": "\(channel.peer)"])
        Task { [self] in
            let reason = await PacketCarrier.carry(peer, of: links, over: channel.packets, outbox: outbox, clock: clock)
            logger.info("the L2CAP channel ended", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
            await hangUp(device.path)
        }
    }

    // MARK: Centrals

    /// Hangs up a central, through its link if it has one so that the fragments queued before go out first;
    /// false if it was already being hung up.
    @discardableResult
    private func hangUpCentral(_ device: DBusObjectPath) -> Bool {
        if let peer = links.peer(at: device) { return links.hangUp(peer) }
        guard centrals.startClosing(device) else { return false }
        Task { await disconnectWhenQuiet(device) }
        return true
    }

    /// Where a link's outbox ends, and at shutdown: the central is disconnected, unless it is gone or already
    /// being hung up.
    private func hangUp(_ device: DBusObjectPath) async {
        guard centrals.startClosing(device) else { return }
        await disconnectWhenQuiet(device)
    }

    /// Disconnects a central being hung up once its writes are answered and it has gone quiet (`quietPeriod`).
    /// Once BlueZ shows it disconnected, its link is taken as down even if the change was never announced (a
    /// write handled after the disconnection's announcement counts its central as connected again).
    private func disconnectWhenQuiet(_ device: DBusObjectPath) async {
        await centrals.quieted(device, quiet: Self.quietPeriod, limit: Self.drainLimit)
        do {
            try await Device(session: adapter.session, path: device).disconnect()
            linkWentDown(device)
        } catch {
            logger.info("disconnecting a central failed", metadata: ["device": "\(device)", "error": "\(error)"])
        }
    }

    /// A central's link went down (nothing if it was not one of ours, or was already taken as down).
    private func linkWentDown(_ device: DBusObjectPath) {
        guard centrals.disconnected(device) else { return }
        if let peer = links.peer(at: device) {
            logger.info("business disconnected", metadata: ["peer": "\(peer)"])
            links.remove(peer)
        }
        advertiseAfresh()
    }

    /// Advertises for the next business, under a new identity if the old one has served its time and no central
    /// is connected (one may be in the middle of a handshake with it).
    private func advertiseAfresh() {
        let replaced = centrals.isEmpty && identity.withLock { identity in
            guard ContinuousClock.now - identity.since > configuration.identityLifetime else { return false }
            identity = Identity()
            return true
        }
        if replaced, configuration.renewsAddress { addressDue.withLock { $0 = true } }
        readvertise.continuation.yield()
    }

    /// A new resolvable private address: the kernel makes one when the adapter powers up (`renewsAddress`).
    private func renewAddress() async throws(BlueZError) {
        logger.info("powering the adapter off and on for a new address", metadata: ["adapter": "\(adapter.name)"])
        try await adapter.setPowered(false)
        try await adapter.setPowered(true)
    }

    /// bluetoothd went away (and every link with it) or came back, or the adapter was powered on again: links are
    /// dropped, then the adapter is powered and advertised again; the GATT application registers again by itself.
    private func recover(_ recovery: Recovery) async {
        switch recovery {
        case .bluetoothdGone:
            logger.warning("bluetoothd went away")
            for device in centrals.devices { linkWentDown(device) }
        case .bluetoothdBack:
            logger.info("bluetoothd is back; advertising again")
            do {
                try await adapter.setPowered(true)
            } catch {
                if !Task.isCancelled { logger.warning("powering the adapter failed", metadata: ["error": "\(error)"]) }
            }
            advertisementDropped()
        case .adapterPoweredOn:
            // Powered off and on again: BlueZ dropped the advertisement with the power.
            logger.info("the adapter is powered again; advertising again")
            advertisementDropped()
        }
    }

    /// The bluetoothd events `recover` acts on.
    private enum Recovery: Sendable {
        case bluetoothdGone, bluetoothdBack, adapterPoweredOn

        init?(_ event: BlueZSession.Event, adapter: DBusObjectPath) {
            switch event {
            case .vanished: self = .bluetoothdGone
            case .restarted: self = .bluetoothdBack
            case .changed(adapter, _, let values) where values["Powered"] == .boolean(true): self = .adapterPoweredOn
            default: return nil
            }
        }
    }

    /// When `tick` next has something to do: a link's time-out, a central's handshake deadline, the identity's
    /// lifetime, or past it, with a central connected that is not being hung up, its grace. Only the identity's
    /// lifetime is timed while idle: a customer with no business near wakes once per `identityLifetime`.
    private func nextDeadline() -> ContinuousClock.Instant? {
        let retired = identity.withLock { $0.since } + configuration.identityLifetime
        let identityDue: ContinuousClock.Instant? = ContinuousClock.now <= retired || centrals.isEmpty
            ? retired : centrals.hasOpen ? retired + configuration.identityGrace : nil
        return [links.nextDeadline, centrals.nextOverdue(after: configuration.handshakeDeadline), identityDue]
            .compactMap { $0 }.min()
    }

    /// At each deadline: the links' time-outs, centrals past the handshake deadline, and the identity's age.
    private func tick() {
        let now = ContinuousClock.now
        links.tick(at: now)
        for device in centrals.overdue(after: configuration.handshakeDeadline, at: now)
        where !links.isEstablished(at: device) {
            logger.info("hanging up a central that did not complete the handshake", metadata: ["device": "\(device)"])
            hangUpCentral(device)
        }
        let age = now - identity.withLock { $0.since }
        guard age > configuration.identityLifetime else { return }
        if centrals.isEmpty {
            advertiseAfresh()
        } else if age > configuration.identityLifetime + configuration.identityGrace {
            // A business staying connected would otherwise hold on to the identity as long as it likes.
            let hungUp = centrals.devices.filter { hangUpCentral($0) }
            if !hungUp.isEmpty {
                logger.info("the identity is overdue; hanging up to replace it", metadata: ["centrals": "\(hungUp.count)"])
            }
        }
    }

    /// Unregisters the advertisement, if one is registered. A central's connection does not end it (in the rig,
    /// Linux 6.1 and BlueZ 5.66, connected customers were still reported by every scan), and a customer advertised
    /// while a business is served would draw other businesses to connections it refuses, cost air and power, and
    /// wake each scanning business at every scan restart.
    private func withdraw() async { await advertisement.withLock { $0.take() }?.handle.stop() }

    /// BlueZ may have dropped the advertisement: registered again at the next request, even if it says the same.
    private func advertisementDropped() {
        advertisement.withLock { $0?.data = nil }
        readvertise.continuation.yield()
    }

    /// Registers the advertisement with the current identity and capabilities, unless BlueZ holds it already.
    private func advertise() async throws(BlueZError) {
        let ephemeralID: FixedBytes<Bytes8>
        do throws(ProtocolError) {
            ephemeralID = try FixedBytes(identity.withLock { $0.ephemeralID })
        } catch {
            throw BlueZError(.failed, "no ephemeral id: \(error)")
        }
        let data = AdvertisementData(
            version: BlepayProtocol.versions.max() ?? 1, capabilities: capabilities.withLock { $0 },
            ephemeralID: ephemeralID)
        guard advertisement.withLock({ $0?.data != data }) else { return }
        await withdraw()
        let handle = try await adapter.advertise(Advertisement(serviceData: [GattLayout.service: data.encoded]))
        advertisement.withLock { $0 = Advertised(handle: handle, data: data) }
    }
}
