import DBusKit

/// A remote device known to an adapter (`org.bluez.Device1`).
public struct Device: Sendable, Hashable {
    public let session: BlueZSession
    public let path: DBusObjectPath

    /// The object at `path` (e.g. the `device` of a `GattRequest`); it need not exist yet.
    public init(session: BlueZSession, path: DBusObjectPath) {
        self.session = session
        self.path = path
    }

    public var address: String? { session.property(path, BlueZ.deviceInterface, "Address") }
    /// "public" or "random": what an L2CAP socket needs besides the address.
    public var addressType: String? { session.property(path, BlueZ.deviceInterface, "AddressType") }
    public var name: String? { session.property(path, BlueZ.deviceInterface, "Name") }
    public var isConnected: Bool { session.property(path, BlueZ.deviceInterface, "Connected") ?? false }
    public var servicesResolved: Bool { session.property(path, BlueZ.deviceInterface, "ServicesResolved") ?? false }
    /// Advertised or resolved service UUIDs, lowercase.
    public var serviceUUIDs: [String] {
        (session.property(path, BlueZ.deviceInterface, "UUIDs", as: [String].self) ?? []).map { $0.lowercased() }
    }
    /// Advertised service data by UUID.
    public var serviceData: [String: [UInt8]] {
        session.property(path, BlueZ.deviceInterface, "ServiceData") ?? [:]
    }

    /// When each step of a successful `connect` completed.
    public struct ConnectReport: Sendable {
        public let attempts: Int
        public let connected: ContinuousClock.Instant
        public let servicesResolved: ContinuousClock.Instant
    }

    /// Connects and waits until services are resolved, retrying what fails transiently on real radios and
    /// under emulation alike (`le-connection-abort-by-local`, a link lost during service discovery, a
    /// connect still in progress), with a short backoff. Stops discovery on the adapter first, since
    /// connecting while discovering fails on many controllers.
    /// `timeout` bounds the `Connect` call, `servicesTimeout` service discovery, per attempt: a stalled discovery
    /// is better retried than waited out until ATT's own 30 s timeout.
    public func connect(
        attempts: Int = 4, timeout: Duration = .seconds(20), servicesTimeout: Duration = .seconds(10)
    ) async throws(BlueZError) -> ConnectReport {
        if let adapterPath = session.property(path, BlueZ.deviceInterface, "Adapter", as: DBusObjectPath.self) {
            try? await Adapter(session: session, path: adapterPath).stopDiscovery()
        }
        var lastError = BlueZError(.failed, "no connection attempt made")
        for attempt in 1...max(1, attempts) {
            do {
                let connected = try await connectOnce(timeout: timeout)
                let resolved = try await waitForServicesResolved(timeout: servicesTimeout)
                return ConnectReport(attempts: attempt, connected: connected, servicesResolved: resolved)
            } catch where Self.isTransient(error) && attempt < attempts {
                lastError = error
                session.logger.info(
                    "connect attempt failed, retrying",
                    metadata: ["device": "\(path)", "attempt": "\(attempt)", "error": "\(error)"])
                try? await disconnect(timeout: .seconds(5))
                try? await Task.sleep(for: .milliseconds(250 * attempt))
            }
        }
        throw lastError
    }

    private static func isTransient(_ error: BlueZError) -> Bool {
        [.failed, .inProgress, .notConnected, .timeout, .connectionAttemptFailed, .notReady].contains(error.code)
    }

    /// In 5.66 `Connect` returns once the link and ATT are up. It does not always announce `Connected`
    /// on the central's device object (it logs "already connected" when the link came up first), so the
    /// reply itself marks the connection.
    private func connectOnce(timeout: Duration) async throws(BlueZError) -> ContinuousClock.Instant {
        do {
            _ = try await session.call(path, BlueZ.deviceInterface, "Connect", timeout: timeout)
        } catch where error.code == .alreadyConnected {}
        return .now
    }

    /// Waits until BlueZ has resolved the device's GATT services; fails with `notConnected` if the link drops
    /// meanwhile.
    public func waitForServicesResolved(timeout: Duration = .seconds(20)) async throws(BlueZError)
        -> ContinuousClock.Instant
    {
        let (session, path) = (session, path)
        return try await session.wait("services of \(path)", timeout: timeout) {
            event throws(BlueZError) -> ContinuousClock.Instant? in
            switch event {
            case .changed(path, BlueZ.deviceInterface, let values) where values["Connected"] == .boolean(false):
                throw BlueZError(.notConnected, "\(path) disconnected before its services were resolved")
            case .removed(path, let interfaces) where interfaces.contains(BlueZ.deviceInterface):
                throw BlueZError(.notFound, "\(path) is gone")
            default:
                return session.property(path, BlueZ.deviceInterface, "ServicesResolved", as: Bool.self) == true
                    ? .now : nil
            }
        }
    }

    /// Disconnects (also cancelling a connect in progress) and waits until the link is down.
    public func disconnect(timeout: Duration = .seconds(10)) async throws(BlueZError) {
        do {
            _ = try await session.call(path, BlueZ.deviceInterface, "Disconnect", timeout: timeout)
        } catch where error.code == .notConnected {}
        let (session, path) = (session, path)
        _ = try await session.wait("disconnection of \(path)", timeout: timeout) { _ -> Bool? in
            let props = session.properties(path, BlueZ.deviceInterface) ?? [:]
            return props["Connected"] == .boolean(true) || props["ServicesResolved"] == .boolean(true) ? nil : true
        }
    }

    /// Each change of the device's `Connected` property.
    public func connectionStates() -> AsyncStream<Bool> {
        let path = self.path
        return session.changes { event in
            guard case .changed(path, BlueZ.deviceInterface, let values) = event,
                case .boolean(let connected)? = values["Connected"]
            else { return nil }
            return connected
        }
    }

    /// The characteristic `characteristic` of service `service` (128-bit UUIDs, any case). BlueZ may announce
    /// `ServicesResolved` before it has exported the GATT objects, so this waits up to `timeout` for them.
    public func characteristic(service: String, characteristic: String, timeout: Duration = .seconds(5))
        async throws(BlueZError) -> RemoteCharacteristic
    {
        let (session, path) = (session, path)
        let (serviceUUID, characteristicUUID) = (service.lowercased(), characteristic.lowercased())
        do {
            return try await session.wait("characteristic \(characteristicUUID)", timeout: timeout) {
                _ -> RemoteCharacteristic? in
                let services = session.paths(with: BlueZ.gattServiceInterface, under: path).filter {
                    session.property($0, BlueZ.gattServiceInterface, "UUID", as: String.self)?.lowercased() == serviceUUID
                }
                let found = session.paths(with: BlueZ.gattCharacteristicInterface, under: path).first { c in
                    let props = session.properties(c, BlueZ.gattCharacteristicInterface) ?? [:]
                    guard case .string(let uuid)? = props["UUID"], uuid.lowercased() == characteristicUUID,
                        case .objectPath(let owner)? = props["Service"]
                    else { return false }
                    return services.contains(owner)
                }
                return found.map { RemoteCharacteristic(session: session, path: $0) }
            }
        } catch where error.code == .timeout {
            throw BlueZError(.notFound, "\(path) has no characteristic \(characteristicUUID) in service \(serviceUUID)")
        }
    }

    public static func == (lhs: Device, rhs: Device) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }
}
