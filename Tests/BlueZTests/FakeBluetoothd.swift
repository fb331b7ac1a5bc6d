import BlueZ
import DBusKit
import DBusTestSupport
import Synchronization
import Testing

/// The D-Bus tier's stand-in for bluetoothd: a connection on a private bus that owns `org.bluez` and answers
/// the parts of BlueZ 5.66's API that the BlueZ module uses, the way bluetoothd does (it calls back into
/// registering clients before replying, emits InterfacesAdded and PropertiesChanged). It records every call,
/// so tests can check what the module sent. Real bluetoothd is exercised by the rig tests.
final class FakeBluetoothd: Sendable {
    let connection: DBusConnection
    private let calls = Mutex<[String]>([])
    private let handles = Mutex<[DBusObjectPath: DBusObjectHandle]>([:])
    /// What `Device1.Connect` does, per call number (from 1); nil succeeds.
    let connectOutcome = Mutex<@Sendable (Int) -> DBusError?>({ _ in nil })
    /// Set by `RegisterApplication` from the client's own `GetManagedObjects` answer.
    let registeredApplication = Mutex<[DBusObjectPath: [String: [String: DBusValue]]]>([:])
    /// Set by `RegisterAdvertisement` from the client's own `GetAll` answer.
    let registeredAdvertisement = Mutex<[String: DBusValue]>([:])

    init(bus: TestBus, adapters: [String] = ["hci0", "hci1"]) async throws {
        connection = try await bus.connect()
        _ = try await connection.export(.root, interfaces: [], objectManager: true)
        for (index, name) in adapters.enumerated() {
            try await addAdapter(name, address: "00:AA:01:0\(index):00:00")
        }
        try await connection.requestName("org.bluez")
    }

    func record(_ call: String) { calls.withLock { $0.append(call) } }
    var recorded: [String] { calls.withLock { $0 } }
    func handle(_ path: DBusObjectPath) -> DBusObjectHandle? { handles.withLock { $0[path] } }

    func export(_ path: DBusObjectPath, _ interfaces: [DBusInterface]) async throws {
        let handle = try await connection.export(path, interfaces: interfaces)
        handles.withLock { $0[path] = handle }
    }

    func remove(_ path: DBusObjectPath) async {
        await handles.withLock { $0.removeValue(forKey: path) }?.unexport()
    }

    func set(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        try await handle(path)!.set(value, property: name, interface: interface)
    }

    /// Leaves the bus, as bluetoothd does when it stops.
    func stop() { connection.close() }

    private func method(_ name: String, input: DBusSignature = "", body: (@Sendable (DBusMethodCall) async throws -> Void)? = nil)
        -> (String, DBusMethod)
    {
        (name, DBusMethod(input: input) { [weak self] call in
            // Recorded once handled, so that a test seeing the call also sees what the handler stored.
            defer { self?.record("\(name) \(call.message.path?.rawValue ?? "") \(call.arguments)") }
            try await body?(call)
            return []
        })
    }

    private func addAdapter(_ name: String, address: String) async throws {
        let path = try DBusObjectPath("/org/bluez/\(name)")
        let adapter = DBusInterface(
            "org.bluez.Adapter1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("SetDiscoveryFilter", input: "a{sv}"), method("StartDiscovery"), method("StopDiscovery"),
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Powered": DBusProperty(.boolean(false), access: .readWrite),
                "Discovering": DBusProperty(.boolean(false)),
            ])
        let gatt = DBusInterface(
            "org.bluez.GattManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterApplication", input: "oa{sv}") { [weak self] call in
                    // Like bluetoothd: read the whole application from the caller before replying.
                    let root: DBusObjectPath = try call.arguments[0].decode()
                    let reply = try await self?.connection.call(
                        destination: call.sender, path: root, interface: "org.freedesktop.DBus.ObjectManager",
                        member: "GetManagedObjects", timeout: .seconds(5))
                    let objects = try reply?.argument(expecting: "a{oa{sa{sv}}}").decode(
                        [DBusObjectPath: [String: [String: DBusValue]]].self) ?? [:]
                    self?.registeredApplication.withLock { $0 = objects }
                },
                method("UnregisterApplication", input: "o"),
            ]))
        let advertising = DBusInterface(
            "org.bluez.LEAdvertisingManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterAdvertisement", input: "oa{sv}") { [weak self] call in
                    let path: DBusObjectPath = try call.arguments[0].decode()
                    let reply = try await self?.connection.call(
                        destination: call.sender, path: path, interface: "org.freedesktop.DBus.Properties",
                        member: "GetAll", arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(5))
                    let properties = try reply?.argument(expecting: "a{sv}").decode([String: DBusValue].self) ?? [:]
                    self?.registeredAdvertisement.withLock { $0 = properties.mapValues(\.unwrapped) }
                },
                method("UnregisterAdvertisement", input: "o"),
            ]))
        try await export(path, [adapter, gatt, advertising])
    }

    /// A remote device under `adapter`, connectable with the outcome set in `connectOutcome`.
    @discardableResult
    func addDevice(_ adapter: String, _ address: String, uuids: [String]) async throws -> DBusObjectPath {
        let path = try DBusObjectPath("/org/bluez/\(adapter)/dev_\(address.replacingOccurrences(of: ":", with: "_"))")
        let attempts = Atomic<Int>(0)
        let device = DBusInterface(
            "org.bluez.Device1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("Connect") { [weak self] _ in
                    guard let self else { return }
                    let attempt = attempts.wrappingAdd(1, ordering: .relaxed).newValue
                    if let error = self.connectOutcome.withLock({ $0 })(attempt) { throw error }
                    // 5.66: the reply comes when the link is up; services resolve afterwards.
                    Task {
                        try await Task.sleep(for: .milliseconds(50))
                        try await self.set(path, "org.bluez.Device1", "ServicesResolved", .boolean(true))
                    }
                },
                method("Disconnect") { [weak self] _ in
                    try await self?.set(path, "org.bluez.Device1", "ServicesResolved", .boolean(false))
                    try await self?.set(path, "org.bluez.Device1", "Connected", .boolean(false))
                },
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Adapter": DBusProperty(.objectPath(try DBusObjectPath("/org/bluez/\(adapter)"))),
                "UUIDs": DBusProperty(.strings(uuids)),
                "Connected": DBusProperty(.boolean(false)),
                "ServicesResolved": DBusProperty(.boolean(false)),
            ])
        try await export(path, [device])
        return path
    }

    /// A GATT service with one characteristic under `device`; writes and notify calls are recorded, reads
    /// return the characteristic's `Value`.
    @discardableResult
    func addCharacteristic(
        device: DBusObjectPath, service: String, characteristic: String, index: Int = 0, busyWrites: Int = 0
    ) async throws -> DBusObjectPath {
        let servicePath = try device.appending("service\(index)")
        try await export(servicePath, [
            DBusInterface("org.bluez.GattService1", properties: [
                "UUID": DBusProperty(.string(service)), "Device": DBusProperty(.objectPath(device)),
                "Primary": DBusProperty(.boolean(true)),
            ])
        ])
        let path = try servicePath.appending("char0")
        let busy = Atomic<Int>(busyWrites)
        let interface = DBusInterface(
            "org.bluez.GattCharacteristic1",
            methods: [
                "WriteValue": DBusMethod(input: "aya{sv}") { [weak self] call in
                    if busy.wrappingSubtract(1, ordering: .relaxed).oldValue > 0 {
                        throw DBusError.reply(name: "org.bluez.Error.InProgress", "In Progress")
                    }
                    self?.record("WriteValue \(call.arguments)")
                    return []
                },
                "ReadValue": DBusMethod(input: "a{sv}", output: "ay") { [weak self] _ in
                    let value = try await self?.connection.call(
                        destination: self?.connection.uniqueName, path: path, interface: "org.freedesktop.DBus.Properties",
                        member: "Get", arguments: [.string("org.bluez.GattCharacteristic1"), .string("Value")])
                    return [value?.arguments.first?.unwrapped ?? .bytes([])]
                },
                "StartNotify": DBusMethod { [weak self] _ in
                    self?.record("StartNotify")
                    try await self?.set(path, "org.bluez.GattCharacteristic1", "Notifying", .boolean(true))
                    return []
                },
                "StopNotify": DBusMethod { _ in [] },
            ],
            properties: [
                "UUID": DBusProperty(.string(characteristic)), "Service": DBusProperty(.objectPath(servicePath)),
                "Flags": DBusProperty(.strings(["read", "write", "notify"])), "Value": DBusProperty(.bytes([1, 2, 3])),
                "Notifying": DBusProperty(.boolean(false)), "MTU": DBusProperty(.uint16(517)),
            ])
        try await export(path, [interface])
        return path
    }
}

/// A private bus with the stand-in and a BlueZ session connected to it.
struct BlueZFixture {
    let bus: TestBus
    let bluetoothd: FakeBluetoothd
    let session: BlueZSession

    static func make() async throws -> BlueZFixture {
        let bus = try TestBus()
        let bluetoothd = try await FakeBluetoothd(bus: bus)
        let session = try await BlueZSession.connect(to: .address(bus.address))
        return BlueZFixture(bus: bus, bluetoothd: bluetoothd, session: session)
    }

    func stop() {
        session.close()
        bluetoothd.stop()
        bus.stop()
    }
}

/// Waits (bounded) until `condition` holds; the BlueZ mirror is updated asynchronously.
func eventually(_ what: String, within: Duration = .seconds(5), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + within
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
