import DBusKit

// MARK: Calling a registered application, as for a central's request

extension FakeBluetoothd {
    /// The options 5.66 passes with a read or write: always `device`, `mtu` and `link`; `offset` when non-zero.
    public static func requestOptions(device: DBusObjectPath, mtu: UInt16, offset: UInt16 = 0) -> DBusValue {
        var options: [String: DBusValue] = ["device": .objectPath(device), "mtu": .uint16(mtu), "link": .string("LE")]
        if offset > 0 { options["offset"] = .uint16(offset) }
        return .stringDictionary(options)
    }

    /// Calls a characteristic of the application registered at `application`. 5.66 gives the application 5 s
    /// (gatt-db's attribute timeout) before it answers the central itself.
    public func callCharacteristic(
        _ path: DBusObjectPath, of application: Registration, _ member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) -> DBusMessage {
        try await connection.call(
            destination: application.owner, path: path, interface: "org.bluez.GattCharacteristic1", member: member,
            arguments: arguments, timeout: .seconds(5))
    }

    /// What the owner of a registered application now answers to GetManagedObjects, or nil for an error.
    public func managedObjects(of application: Registration) async -> [DBusObjectPath: [String: [String: DBusValue]]]? {
        let reply = try? await connection.call(
            destination: application.owner, path: application.path, interface: Self.objectManagerInterface,
            member: "GetManagedObjects", timeout: .seconds(5))
        let objects = try? reply?.argument(expecting: "a{oa{sa{sv}}}").decode(
            [DBusObjectPath: [String: [String: DBusValue]]].self)
        return objects?.mapValues { $0.mapValues { $0.mapValues(\.unwrapped) } }
    }

    /// What the owner of a registered advertisement now answers to GetAll, or nil for an error.
    public func advertisementProperties(of advertisement: Registration) async -> [String: DBusValue]? {
        let reply = try? await connection.call(
            destination: advertisement.owner, path: advertisement.path, interface: Self.propertiesInterface,
            member: "GetAll", arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(5))
        return try? reply?.argument(expecting: "a{sv}").decode([String: DBusValue].self).mapValues(\.unwrapped)
    }

    /// PropertiesChanged from one object of the application's owner.
    public func propertyChanges(of path: DBusObjectPath, in application: Registration) async throws
        -> AsyncStream<DBusMessage>
    {
        try await connection.signals(
            matching: DBusMatchRule(
                sender: application.owner, interface: Self.propertiesInterface, member: "PropertiesChanged", path: path))
    }

    /// A remote central connects to `adapter`: its device object appears (or, if known, turns `Connected`), as for
    /// a central that connects to our advertisement; it then uses `application` with ATT MTU `mtu`.
    public func connectCentral(
        _ adapter: String = "hci0", address: String, to application: Registration, mtu: UInt16 = 517
    ) async throws -> Central {
        let device = try DBusObjectPath("/org/bluez/\(adapter)/dev_\(address.replacingOccurrences(of: ":", with: "_"))")
        if state.withLock({ $0.objects[device] != nil }) {
            state.withLock { _ = $0.connected.insert(device) }
            try await set(device, "org.bluez.Device1", "Connected", .boolean(true))
        } else {
            try await addDevice(adapter, address, connected: true)
        }
        return Central(device: device, application: application, mtu: mtu, bluetoothd: self)
    }

    /// A central's subscriptions end with its link; StopNotify goes to the application when the last one ends.
    func unsubscribeAll(_ device: DBusObjectPath) async throws {
        let unsubscribed = state.withLock { state in
            var paths: [DBusObjectPath] = []
            for path in Array(state.subscribers.keys) where state.subscribers[path]?.remove(device) != nil {
                paths.append(path)
            }
            return paths
        }
        for path in unsubscribed { try await stopNotifyIfLast(path) }
    }

    private func stopNotifyIfLast(_ path: DBusObjectPath) async throws {
        let application = state.withLock { state in
            state.subscribers[path]?.isEmpty == true ? state.applications.values.first { $0.objects[path] != nil } : nil
        }
        guard let application else { return }
        _ = try await callCharacteristic(path, of: application, "StopNotify")
    }
}

/// A remote central connected to one of the stand-in's adapters, using a registered application the way 5.66
/// serves it: each request carries the central's `device`, the link's `mtu` and `link`; the first subscription to
/// a characteristic calls StartNotify, and the central receives a value notified while it is connected and
/// subscribed, cut to MTU−3 bytes.
public struct Central: Sendable {
    public let device: DBusObjectPath
    public let application: FakeBluetoothd.Registration
    public let mtu: UInt16
    let bluetoothd: FakeBluetoothd

    public var isConnected: Bool { bluetoothd.isConnected(device) }

    /// Enables notifications of the characteristic `uuid` and returns the values it notifies to this central.
    public func subscribe(_ uuid: String) async throws -> AsyncStream<[UInt8]> {
        let path = try characteristic(uuid)
        let changes = try await bluetoothd.propertyChanges(of: path, in: application)
        let (bluetoothd, device, payload) = (bluetoothd, device, Int(mtu) - 3)
        let first = bluetoothd.state.withLock { state in
            defer { state.subscribers[path, default: []].insert(device) }
            return state.subscribers[path, default: []].isEmpty
        }
        if first { _ = try await bluetoothd.callCharacteristic(path, of: application, "StartNotify") }
        return AsyncStream { continuation in
            let task = Task {
                for await message in changes {
                    guard bluetoothd.state.withLock({ $0.subscribers[path]?.contains(device) == true }),
                        let arguments = try? message.arguments(expecting: "sa{sv}as"),
                        let changed = try? arguments[1].decode([String: DBusValue].self),
                        case .bytes(let value)? = changed["Value"]?.unwrapped
                    else { continue }
                    continuation.yield(Array(value.prefix(payload)))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// A write request: what the application answers, recorded in `linkEvents`.
    public func write(_ uuid: String, _ value: [UInt8]) async throws {
        let path = try characteristic(uuid)
        guard isConnected else { throw DBusError.reply(name: "org.bluez.Error.NotConnected", "Not Connected") }
        bluetoothd.state.withLock { $0.unansweredWrites[device, default: 0] += 1 }
        var failure: DBusError?
        do {
            _ = try await bluetoothd.callCharacteristic(
                path, of: application, "WriteValue",
                [.bytes(value), FakeBluetoothd.requestOptions(device: device, mtu: mtu)])
        } catch {
            failure = error
        }
        bluetoothd.state.withLock { state in
            state.unansweredWrites[device, default: 1] -= 1
            state.linkEvents.append(.writeAnswered(device, error: failure.map { $0.name ?? "\($0.code)" }))
        }
        if let failure { throw failure }
    }

    public func read(_ uuid: String) async throws -> [UInt8] {
        let reply = try await bluetoothd.callCharacteristic(
            try characteristic(uuid), of: application, "ReadValue",
            [FakeBluetoothd.requestOptions(device: device, mtu: mtu)])
        return try reply.argument(expecting: "ay").decode()
    }

    /// The central goes away.
    public func disconnect() async throws { try await bluetoothd.loseLink(device) }

    private func characteristic(_ uuid: String) throws -> DBusObjectPath {
        guard let path = application.characteristic(uuid) else {
            throw DBusError(.invalidValue, "the application has no characteristic \(uuid)")
        }
        return path
    }
}
