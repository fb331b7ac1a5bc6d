import DBusKit
import Synchronization

/// A GATT server application declared as data: services with characteristics and their handlers.
public struct GattApplication: Sendable {
    public var services: [GattService]
    public init(services: [GattService]) { self.services = services }
}

public struct GattService: Sendable {
    public var uuid: String
    public var isPrimary: Bool
    public var characteristics: [GattCharacteristic]

    public init(uuid: String, isPrimary: Bool = true, characteristics: [GattCharacteristic]) {
        self.uuid = uuid.lowercased()
        self.isPrimary = isPrimary
        self.characteristics = characteristics
    }
}

/// Who asked, and on what link: the options BlueZ passes with every read and write.
public struct GattRequest: Sendable {
    /// The central's device object, e.g. `/org/bluez/hci0/dev_00_AA_01_01_00_02`.
    public let device: DBusObjectPath?
    /// The link's ATT MTU; a notification carries at most `mtu - 3` bytes.
    public let mtu: Int?
    public let offset: Int

    init(options: [String: DBusValue]) {
        device = try? options["device"]?.decode(DBusObjectPath.self)
        mtu = (try? options["mtu"]?.decode(UInt16.self)).map(Int.init)
        offset = (try? options["offset"]?.decode(UInt16.self)).map(Int.init) ?? 0
    }
}

/// A local characteristic. Flags are BlueZ's (`read`, `write`, `notify`, …). Do not combine `write` with
/// `write-without-response` when writes must be acknowledged only after the handler accepted them: BlueZ
/// then acknowledges every write at once.
public struct GattCharacteristic: Sendable {
    public typealias WriteHandler = @Sendable ([UInt8], GattRequest) async throws(BlueZError) -> Void
    /// Runs on the bus connection's thread, each write before the next is looked at: it must be quick.
    public typealias OrderedWriteHandler = @Sendable ([UInt8], GattRequest) throws(BlueZError) -> Void
    public typealias ReadHandler = @Sendable (GattRequest) async throws(BlueZError) -> [UInt8]

    public var uuid: String
    public var flags: [String]
    public var value: [UInt8]
    public var onWrite: WriteHandler?
    /// Instead of `onWrite`: writes handled in the order they came. bluetoothd passes write commands
    /// (`write-without-response`) on without waiting for an answer, so several are in flight at once.
    public var onOrderedWrite: OrderedWriteHandler?
    /// Without it, reads return `value` (as last set or notified) from the requested offset.
    public var onRead: ReadHandler?

    public init(
        uuid: String, flags: [String], value: [UInt8] = [], onWrite: WriteHandler? = nil, onRead: ReadHandler? = nil
    ) {
        self.uuid = uuid.lowercased()
        self.flags = flags
        self.value = value
        self.onWrite = onWrite
        self.onRead = onRead
    }

    public init(uuid: String, flags: [String], onOrderedWrite: @escaping OrderedWriteHandler) {
        self.init(uuid: uuid, flags: flags)
        self.onOrderedWrite = onOrderedWrite
    }
}

extension Adapter {
    /// Exports the application and registers it with this adapter's `GattManager1`. The handle sends
    /// notifications and unregisters. The application is registered again after bluetoothd restarts.
    public func serve(_ application: GattApplication) async throws(BlueZError) -> GattApplicationHandle {
        let root = ExportPaths.next("app")
        let objects = GattObjects()
        var exported: [DBusObjectHandle] = []
        do throws(BlueZError) {
            for (s, service) in application.services.enumerated() {
                let servicePath = try bluezPath("\(root.rawValue)/service\(s)")
                exported.append(try await export(session, servicePath, [Self.serviceInterface(service)]))
                for (c, characteristic) in service.characteristics.enumerated() {
                    let path = try bluezPath("\(servicePath.rawValue)/char\(c)")
                    let interface = Self.characteristicInterface(characteristic, service: servicePath, objects: objects)
                    let handle = try await export(session, path, [interface])
                    objects.add(uuid: characteristic.uuid, handle: handle, value: characteristic.value)
                    exported.append(handle)
                }
            }
            exported.append(try await export(session, root, [], objectManager: true))
            let registration = try await Registration(
                adapter: self, object: root, manager: BlueZ.gattManagerInterface, member: "Application")
            return GattApplicationHandle(registration: registration, objects: objects, exported: exported)
        } catch {
            for object in exported { await object.unexport() }
            throw error
        }
    }

    private static func serviceInterface(_ service: GattService) -> DBusInterface {
        DBusInterface(
            BlueZ.gattServiceInterface,
            properties: ["UUID": DBusProperty(.string(service.uuid)), "Primary": DBusProperty(.boolean(service.isPrimary))])
    }

    private static func characteristicInterface(
        _ characteristic: GattCharacteristic, service: DBusObjectPath, objects: GattObjects
    ) -> DBusInterface {
        let uuid = characteristic.uuid
        var methods: [String: DBusMethod] = [
            "ReadValue": DBusMethod(input: "a{sv}", output: "ay") { call in
                let request = GattRequest(options: try call.arguments[0].decode())
                let value: [UInt8]
                do throws(BlueZError) {
                    value = try await characteristic.onRead?(request) ?? objects.value(of: uuid)
                } catch {
                    throw error.asReply
                }
                guard request.offset <= value.count else {
                    throw DBusError.reply(name: "org.bluez.Error.InvalidOffset", "offset past the value")
                }
                return [.bytes(Array(value[request.offset...]))]
            },
            "WriteValue": Self.writeValue(characteristic),
        ]
        var properties: [String: DBusProperty] = [
            "UUID": DBusProperty(.string(uuid)),
            "Service": DBusProperty(.objectPath(service)),
            "Flags": DBusProperty(.strings(characteristic.flags)),
            "Value": DBusProperty(.bytes(characteristic.value)),
        ]
        if characteristic.flags.contains("notify") || characteristic.flags.contains("indicate") {
            properties["Notifying"] = DBusProperty(.boolean(false))
            methods["StartNotify"] = DBusMethod { _ in
                try await objects.setNotifying(true, uuid: uuid)
                return []
            }
            methods["StopNotify"] = DBusMethod { _ in
                try await objects.setNotifying(false, uuid: uuid)
                return []
            }
        }
        return DBusInterface(BlueZ.gattCharacteristicInterface, methods: methods, properties: properties)
    }

    /// `WriteValue`, ordered when the characteristic has `onOrderedWrite`. Its reply is empty: with any other,
    /// BlueZ answers "Request Not Supported".
    private static func writeValue(_ characteristic: GattCharacteristic) -> DBusMethod {
        if let onOrderedWrite = characteristic.onOrderedWrite {
            return DBusMethod.ordered(input: "aya{sv}") { call in
                let (value, request) = try Self.write(call)
                do throws(BlueZError) { try onOrderedWrite(value, request) } catch { throw error.asReply }
                return []
            }
        }
        return DBusMethod(input: "aya{sv}") { call in
            let (value, request) = try Self.write(call)
            guard let onWrite = characteristic.onWrite else {
                throw DBusError.reply(name: "org.bluez.Error.NotPermitted", "not writable")
            }
            do throws(BlueZError) { try await onWrite(value, request) } catch { throw error.asReply }
            return []
        }
    }

    private static func write(_ call: DBusMethodCall) throws -> ([UInt8], GattRequest) {
        (try call.arguments[0].decode(), GattRequest(options: try call.arguments[1].decode()))
    }
}

/// The exported characteristics of one application, by UUID, with their last value and notify state.
final class GattObjects: Sendable {
    private struct Entry {
        let handle: DBusObjectHandle
        var value: [UInt8] = []
        var notifying = false
    }

    private let entries = Mutex<[String: Entry]>([:])

    func add(uuid: String, handle: DBusObjectHandle, value: [UInt8]) {
        entries.withLock { $0[uuid] = Entry(handle: handle, value: value) }
    }

    func value(of uuid: String) -> [UInt8] { entries.withLock { $0[uuid]?.value ?? [] } }
    func isNotifying(_ uuid: String) -> Bool { entries.withLock { $0[uuid]?.notifying ?? false } }

    func setNotifying(_ on: Bool, uuid: String) async throws(DBusError) {
        guard let handle = entries.withLock({ entries -> DBusObjectHandle? in
            entries[uuid]?.notifying = on
            return entries[uuid]?.handle
        }) else { return }
        try await handle.set(.boolean(on), property: "Notifying", interface: BlueZ.gattCharacteristicInterface)
    }

    /// Sets the value; BlueZ notifies it to every subscribed central, cut to MTU−3 bytes.
    func notify(_ value: [UInt8], uuid: String) async throws(BlueZError) {
        guard let handle = entries.withLock({ entries -> DBusObjectHandle? in
            entries[uuid]?.value = value
            return entries[uuid]?.handle
        }) else { throw BlueZError(.notFound, "no local characteristic \(uuid)") }
        try await bluez { () throws(DBusError) in
            try await handle.set(.bytes(value), property: "Value", interface: BlueZ.gattCharacteristicInterface)
        }
    }
}

/// A registered GATT application.
public final class GattApplicationHandle: Sendable {
    private let registration: Registration
    private let objects: GattObjects
    private let exported: [DBusObjectHandle]

    init(registration: Registration, objects: GattObjects, exported: [DBusObjectHandle]) {
        self.registration = registration
        self.objects = objects
        self.exported = exported
    }

    /// Sends `value` to every central subscribed to the characteristic. BlueZ cuts a notification to
    /// MTU−3 bytes without warning, so callers split larger values themselves.
    public func notify(_ uuid: String, _ value: [UInt8]) async throws(BlueZError) {
        try await objects.notify(value, uuid: uuid.lowercased())
    }

    /// Whether some central has enabled notifications for the characteristic.
    public func isNotifying(_ uuid: String) -> Bool { objects.isNotifying(uuid.lowercased()) }

    /// Unregisters the application and removes its objects.
    public func stop() async {
        await registration.cancel()
        for object in exported.reversed() { await object.unexport() }
    }
}
