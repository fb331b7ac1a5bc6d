import BlepayPayments
import BlepayProtocol
import BlueZ
import Crypto
import DBusKit
import Logging
import Synchronization

/// The customer's side of blepay over BLE (`docs/protocol.md` §1–3, §7): serves the GATT service, advertises its
/// service data, and runs one `Link` per business connection, the fragments to it sent as notifications.
///
/// One business at a time: BlueZ 5.66 sends a notification to every subscribed central, so while a business is
/// connected a second one's writes are refused (`NotPermitted`) and it finds no advertisement to connect to.
public final class CustomerTransport: PaymentTransport, Sendable {
    public struct Configuration: Sendable {
        /// Ledger keys whose merchant certificates are accepted.
        public var trustedLedgerKeys: TrustedLedgerKeys
        /// How long one advertising identity (ephemeral id and Noise static key) is used at most; it is
        /// replaced when this has passed and no business is connected.
        public var identityLifetime: Duration

        public init(trustedLedgerKeys: TrustedLedgerKeys, identityLifetime: Duration = .seconds(900)) {
            self.trustedLedgerKeys = trustedLedgerKeys
            self.identityLifetime = identityLifetime
        }
    }

    /// What the customer shows nearby businesses; replaced together, never derived from who the customer is.
    private struct Identity {
        var staticKey = Curve25519.KeyAgreement.PrivateKey()
        var ephemeralID = try! FixedBytes<Bytes8>((0..<8).map { _ in UInt8.random(in: .min ... .max) })
        var since = ContinuousClock.now
    }

    private let adapter: Adapter
    private let configuration: Configuration
    private let logger: Logger
    private let clock: @Sendable () -> Timestamp
    private let links: LinkTable<DBusObjectPath>
    private let identity = Mutex(Identity())
    private let capabilities: Mutex<Capabilities>
    private let application = Mutex<GattApplicationHandle?>(nil)
    private let advertisement = Mutex<AdvertisementHandle?>(nil)
    /// Requests to advertise afresh, carried out one at a time by `run`.
    private let readvertise = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

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
    /// disconnects the business, unregisters, and ends `events`. `ready` is called once both are registered.
    public func run(ready: @Sendable () -> Void = {}) async throws(BlueZError) {
        defer { links.finish() }
        try await adapter.setPowered(true)
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
        let connections = adapter.connectionEvents()
        let bluetoothd = adapter.session.events()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                for await event in connections where !event.connected { linkWentDown(event.device.path) }
            }
            group.addTask { [self] in
                for await event in bluetoothd { await recover(event) }
            }
            group.addTask { [self] in
                while (try? await Task.sleep(for: .seconds(1))) != nil { tick() }
            }
            group.addTask { [self] in
                for await _ in readvertise.stream {
                    do {
                        try await advertise()
                    } catch {
                        logger.warning("advertising failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        for device in links.addresses { try? await Device(session: adapter.session, path: device).disconnect() }
        await advertisement.withLock { $0.take() }?.stop()
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
        if links.isEmpty { readvertise.continuation.yield() }
    }

    // MARK: GATT

    private func gattApplication() -> GattApplication {
        GattApplication(services: [
            GattService(
                uuid: GattLayout.service,
                characteristics: [
                    GattCharacteristic(uuid: GattLayout.toCustomer, flags: ["write"]) {
                        [self] (value, request) throws(BlueZError) in try received(value, request)
                    },
                    GattCharacteristic(uuid: GattLayout.toBusiness, flags: ["notify"]),
                    GattCharacteristic(
                        uuid: GattLayout.info, flags: ["read"],
                        onRead: { [self] _ throws(BlueZError) in info().encoded }),
                ])
        ])
    }

    private func info() -> ProtocolInfo {
        try! ProtocolInfo(
            versions: BlepayProtocol.versions.sorted(by: >), capabilities: capabilities.withLock { $0 },
            maximumMessageSize: UInt16(SecureSession.maximumMessageSize))
    }

    private func received(_ fragment: [UInt8], _ request: GattRequest) throws(BlueZError) {
        guard let device = request.device else { throw BlueZError(.notPermitted, "a write that names no device") }
        let mtu = request.mtu ?? Framing.minimumMTU
        let peer: PeerID
        if let known = links.peer(at: device) { peer = known } else { peer = try open(device, mtu: mtu) }
        links.update(peer) { link in link.setMTU(mtu) + link.receive(fragment, at: .now, now: clock()) }
    }

    /// A new business's first write: its link, and the task that sends its fragments as notifications.
    private func open(_ device: DBusObjectPath, mtu: Int) throws(BlueZError) -> PeerID {
        guard links.isEmpty else { throw BlueZError(.notPermitted, "another business is connected") }
        let handshake = identity.withLock {
            CustomerHandshake(staticKey: $0.staticKey, info: info(), trusting: configuration.trustedLedgerKeys)
        }
        let link: Link
        do throws(ProtocolError) {
            link = try Link(customer: handshake, mtu: mtu, at: .now)
        } catch {
            throw BlueZError(.invalidArguments, error.description)
        }
        let (peer, outbox) = links.add(link, at: device)
        logger.info("business connected", metadata: ["peer": "\(peer)", "mtu": "\(mtu)"])
        Task { [self] in
            for await outgoing in outbox {
                guard case .fragment(let fragment) = outgoing,
                    let app = application.withLock({ $0 }),
                    (try? await app.notify(GattLayout.toBusiness, fragment)) != nil
                else { break }
            }
            try? await Device(session: adapter.session, path: device).disconnect()
        }
        return peer
    }

    // MARK: Links

    private func linkWentDown(_ device: DBusObjectPath) {
        if let peer = links.peer(at: device) {
            logger.info("business disconnected", metadata: ["peer": "\(peer)"])
            links.remove(peer)
        }
        // The controller stops advertising when a central connects; advertise afresh for the next one.
        if links.isEmpty { readvertise.continuation.yield() }
    }

    /// bluetoothd went away (and every link with it) or came back, or the adapter was powered on again: links are
    /// dropped, then the adapter is powered and advertised again; the GATT application registers again by itself.
    private func recover(_ event: BlueZSession.Event) async {
        switch event {
        case .vanished:
            logger.warning("bluetoothd went away")
            for device in links.addresses { linkWentDown(device) }
        case .restarted:
            logger.info("bluetoothd is back; advertising again")
            do {
                try await adapter.setPowered(true)
            } catch {
                logger.warning("powering the adapter failed", metadata: ["error": "\(error)"])
            }
            readvertise.continuation.yield()
        case .changed(adapter.path, _, let values) where values["Powered"] == .boolean(true):
            // Powered off and on again: BlueZ dropped the advertisement with the power.
            logger.info("the adapter is powered again; advertising again")
            readvertise.continuation.yield()
        default:
            break
        }
    }

    private func tick() {
        links.tick(at: .now)
        let due = identity.withLock { ContinuousClock.now - $0.since > configuration.identityLifetime }
        guard due, links.isEmpty else { return }
        identity.withLock { $0 = Identity() }
        readvertise.continuation.yield()
    }

    /// (Re)registers the advertisement with the current identity and capabilities.
    private func advertise() async throws(BlueZError) {
        let data = AdvertisementData(
            version: BlepayProtocol.versions.max() ?? 1, capabilities: capabilities.withLock { $0 },
            ephemeralID: identity.withLock { $0.ephemeralID })
        await advertisement.withLock { $0.take() }?.stop()
        let handle = try await adapter.advertise(Advertisement(serviceData: [GattLayout.service: data.encoded]))
        advertisement.withLock { $0 = handle }
    }
}
