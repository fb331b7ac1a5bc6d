import DBusKit

/// A local Bluetooth adapter (`org.bluez.Adapter1`), e.g. `/org/bluez/hci0`.
public struct Adapter: Sendable, Hashable {
    public let session: BlueZSession
    public let path: DBusObjectPath

    /// The adapter's name, e.g. `hci0`.
    public var name: String { String(path.rawValue.split(separator: "/").last ?? "") }
    public var address: String? { session.property(path, BlueZ.adapterInterface, "Address") }
    /// "public" or "random": the type of `address`.
    public var addressType: String? { session.property(path, BlueZ.adapterInterface, "AddressType") }
    /// Whether bluetoothd shows the adapter (it is gone while bluetoothd is, or the controller was removed).
    public var isPresent: Bool { session.properties(path, BlueZ.adapterInterface) != nil }
    public var isPowered: Bool { session.property(path, BlueZ.adapterInterface, "Powered") ?? false }

    /// Powers the adapter on or off and waits until it reports the new state.
    public func setPowered(_ on: Bool, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        try await session.setProperty(path, BlueZ.adapterInterface, "Powered", .boolean(on))
        let (session, path) = (session, path)
        _ = try await session.wait("adapter powered \(on ? "on" : "off")", timeout: timeout) { _ -> Bool? in
            session.property(path, BlueZ.adapterInterface, "Powered", as: Bool.self) == on ? true : nil
        }
    }

    /// Sets this client's discovery filter. BlueZ merges the filters of all its clients, so the devices it
    /// reports are checked against the filter again in `discoveredDevices(matching:)`.
    public func setDiscoveryFilter(_ filter: DiscoveryFilter) async throws(BlueZError) {
        _ = try await session.call(path, BlueZ.adapterInterface, "SetDiscoveryFilter", [filter.dbusValue])
    }

    public var isDiscovering: Bool { session.property(path, BlueZ.adapterInterface, "Discovering") ?? false }

    /// Starts discovery for this client, or confirms that it runs. BlueZ 5.66 answers `InProgress` both when this
    /// client already discovers and when the controller failed to start scanning (a timed-out HCI command), so
    /// `InProgress` counts only if the adapter reports `Discovering` within `timeout`; otherwise this throws
    /// `.failed`, and the caller knows it is not scanning.
    public func startDiscovery(timeout: Duration = .seconds(3)) async throws(BlueZError) {
        do {
            _ = try await session.call(path, BlueZ.adapterInterface, "StartDiscovery")
        } catch where error.code == .inProgress {
            do {
                _ = try await session.wait("discovery on \(name)", timeout: timeout) { [self] _ -> Bool? in
                    isDiscovering ? true : nil
                }
            } catch where error.code == .timeout {
                throw BlueZError(.failed, "bluetoothd answered InProgress but \(name) is not discovering")
            }
        }
    }

    /// Stops discovery; stopping when this client is not discovering is not an error.
    public func stopDiscovery() async throws(BlueZError) {
        do {
            _ = try await session.call(path, BlueZ.adapterInterface, "StopDiscovery")
        } catch where error.code == .notReady || error.code == .failed {
            // "No discovery started" / adapter not discovering.
        }
    }

    /// Makes bluetoothd forget a device (disconnecting it first), so that the next discovery finds it afresh:
    /// the way out of a device object stuck after failed connection attempts.
    public func removeDevice(_ device: Device) async throws(BlueZError) {
        _ = try await session.call(path, BlueZ.adapterInterface, "RemoveDevice", [.objectPath(device.path)])
    }

    /// Devices on this adapter: those already known, then each one that appears or changes, as long as it
    /// matches `filter` (its advertised service UUIDs). A device is yielded once per appearance.
    public func discoveredDevices(matching filter: DiscoveryFilter = DiscoveryFilter()) -> AsyncStream<Device> {
        let events = session.events()
        let (session, path) = (session, path)
        return AsyncStream { continuation in
            let task = Task {
                var seen: Set<DBusObjectPath> = []
                func offer(_ devicePath: DBusObjectPath) {
                    // GATT objects below a device are not devices.
                    guard !seen.contains(devicePath), devicePath.isDescendant(of: path),
                        session.properties(devicePath, BlueZ.deviceInterface) != nil
                    else { return }
                    let device = Device(session: session, path: devicePath)
                    guard filter.matches(device) else { return }
                    seen.insert(devicePath)
                    continuation.yield(device)
                }
                for devicePath in session.paths(with: BlueZ.deviceInterface, under: path) { offer(devicePath) }
                for await event in events {
                    switch event {
                    case .added(let p, _), .changed(let p, BlueZ.deviceInterface, _): offer(p)
                    case .removed(let p, let interfaces) where interfaces.contains(BlueZ.deviceInterface):
                        seen.remove(p)
                    default: break
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Every device BlueZ knows on this adapter: discovered, connected or remembered.
    public var devices: [Device] {
        session.paths(with: BlueZ.deviceInterface, under: path).map { Device(session: session, path: $0) }
    }

    /// The device with this address, if BlueZ knows it.
    public func device(address: String) -> Device? {
        session.paths(with: BlueZ.deviceInterface, under: path).lazy.map { Device(session: session, path: $0) }
            .first { $0.address?.uppercased() == address.uppercased() }
    }

    /// Links to and from this adapter coming up and going down, as seen by BlueZ: what a peripheral uses to
    /// observe centrals connecting and disconnecting.
    public func connectionEvents() -> AsyncStream<ConnectionEvent> {
        let (session, path) = (session, path)
        return session.changes { event in
            switch event {
            case .added(let p, let interfaces) where p.isDescendant(of: path):
                guard case .boolean(true)? = interfaces[BlueZ.deviceInterface]?["Connected"]?.unwrapped else { return nil }
                return ConnectionEvent(device: Device(session: session, path: p), connected: true)
            case .changed(let p, BlueZ.deviceInterface, let values) where p.isDescendant(of: path):
                guard case .boolean(let connected)? = values["Connected"] else { return nil }
                return ConnectionEvent(device: Device(session: session, path: p), connected: connected)
            default:
                return nil
            }
        }
    }

    public static func == (lhs: Adapter, rhs: Adapter) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }
}

/// A device connecting to or disconnecting from an adapter.
public struct ConnectionEvent: Sendable {
    public let device: Device
    public let connected: Bool
}

/// What discovery looks for (`Adapter1.SetDiscoveryFilter`).
public struct DiscoveryFilter: Sendable, Hashable {
    /// Lowercase 128-bit service UUIDs; a device matches if it advertises any of them. Empty matches all.
    public var serviceUUIDs: [String]
    public var transport: String
    /// Report every advertisement, not only changes.
    public var duplicateData: Bool

    public init(serviceUUIDs: [String] = [], transport: String = "le", duplicateData: Bool = false) {
        self.serviceUUIDs = serviceUUIDs.map { $0.lowercased() }
        self.transport = transport
        self.duplicateData = duplicateData
    }

    var dbusValue: DBusValue {
        var entries: [String: DBusValue] = [
            "Transport": .string(transport), "DuplicateData": .boolean(duplicateData),
        ]
        if !serviceUUIDs.isEmpty { entries["UUIDs"] = .strings(serviceUUIDs) }
        return .stringDictionary(entries)
    }

    func matches(_ device: Device) -> Bool {
        serviceUUIDs.isEmpty || !Set(device.serviceUUIDs).isDisjoint(with: serviceUUIDs)
    }
}
