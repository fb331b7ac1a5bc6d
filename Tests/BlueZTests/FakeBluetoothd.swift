import DBusKit
import DBusTestSupport
import Synchronization

/// The stand-in for bluetoothd on the D-Bus test tier: a connection on a private bus that owns `org.bluez`
/// and plays bluetoothd 5.66's side of the API the BlueZ module uses, as BlueZ's doc/*-api.txt and sources
/// at that tag describe it. Real bluetoothd is exercised by the rig tests.
///
/// - `/` is an ObjectManager. Adapters `/org/bluez/hciN` have Adapter1, GattManager1 and
///   LEAdvertisingManager1; devices `…/dev_XX_…` have Device1, with GATT services and characteristics below.
/// - Adapter1: `Powered` is changed with Properties.Set. Discovery needs a powered adapter (`NotReady`);
///   StopDiscovery without a discovery fails ("No discovery started").
/// - Device1: Connect brings the link up (`Connected`), replies, then discovers services (exporting those not
///   exported yet) and sets `ServicesResolved`, unless `connectOutcome` says otherwise. Disconnect without
///   a link answers `NotConnected`.
/// - GattCharacteristic1: reads return what was last written or notified, and also update `Value` (as 5.66
///   does); StartNotify replies, then sets `Notifying`; any method can be made to answer `InProgress` first
///   (`answerInProgress`, `rearmSubscription`).
/// - RegisterApplication reads the application with GetManagedObjects, RegisterAdvertisement tries
///   GetManagedObjects and then reads Properties.GetAll, from the caller before replying; both refuse what
///   bluetoothd refuses (`AlreadyExists`, `Failed` for an unusable tree or advertisement).
///
/// Every method call is recorded once handled, so a test that sees a call also sees its effects.
final class FakeBluetoothd: Sendable {
    /// A method call bluetoothd answered; a property set through Properties.Set is `Set <name>`.
    struct Call: Sendable, Hashable {
        let member: String
        let path: DBusObjectPath
        let arguments: [DBusValue]
    }

    /// What one `Device1.Connect` does.
    enum ConnectOutcome: Sendable {
        /// Link up, reply, services resolved shortly after.
        case connect
        /// An error reply; no link.
        case fail(DBusError)
        /// Link up and reply, then the link is lost during service discovery.
        case dropDuringDiscovery
    }

    struct RemoteService: Sendable {
        var uuid: String
        var characteristics: [RemoteCharacteristicSpec]
    }

    struct RemoteCharacteristicSpec: Sendable {
        var uuid: String
        var value: [UInt8] = []
        var flags: [String] = ["read", "write", "notify"]
    }

    /// An application or advertisement as bluetoothd read it from its owner before replying.
    struct Registration: Sendable {
        let owner: String
        let path: DBusObjectPath
        /// An application's GetManagedObjects; for an advertisement, its GetAll as its only object.
        let objects: [DBusObjectPath: [String: [String: DBusValue]]]

        var advertisement: [String: DBusValue] { objects[path]?["org.bluez.LEAdvertisement1"] ?? [:] }

        /// The path of an application's characteristic.
        func characteristic(_ uuid: String) -> DBusObjectPath? {
            objects.first { $0.value["org.bluez.GattCharacteristic1"]?["UUID"] == .string(uuid) }?.key
        }
    }

    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"

    let connection: DBusConnection
    /// What `Device1.Connect` does, by the device's call number (from 1).
    let connectOutcome = Mutex<@Sendable (Int) -> ConnectOutcome>({ _ in .connect })

    private struct State {
        var calls: [Call] = []
        var objects: [DBusObjectPath: DBusObjectHandle] = [:]
        var powered: Set<DBusObjectPath> = []
        var discovering: Set<DBusObjectPath> = []
        var connected: Set<DBusObjectPath> = []
        var connectAttempts: [DBusObjectPath: Int] = [:]
        /// Services of devices, exported at the first connection.
        var pendingServices: [DBusObjectPath: [RemoteService]] = [:]
        var nextHandle: [DBusObjectPath: Int] = [:]
        var values: [DBusObjectPath: [UInt8]] = [:]
        /// "path member" → how many more calls answer InProgress.
        var inProgress: [String: Int] = [:]
        /// Characteristics whose earlier subscription is being re-armed.
        var rearming: Set<DBusObjectPath> = []
        var applications: [DBusObjectPath: Registration] = [:]
        var advertisements: [DBusObjectPath: Registration] = [:]
    }

    private let state = Mutex(State())

    /// Exports the adapters (powered or not, as with `AutoEnable`), lets `prepare` add more objects, then takes
    /// `org.bluez`: a client sees everything at once, as when bluetoothd starts.
    init(
        bus: TestBus, adapters: [String] = ["hci0", "hci1"], powered: Bool = false,
        prepare: (FakeBluetoothd) async throws -> Void = { _ in }
    ) async throws {
        connection = try await bus.connect()
        _ = try await connection.export(.root, interfaces: [], objectManager: true)
        for (index, name) in adapters.enumerated() {
            try await addAdapter(name, address: "00:AA:01:0\(index):00:00", powered: powered)
        }
        try await prepare(self)
        try await connection.requestName("org.bluez")
    }

    /// Leaves the bus, as bluetoothd does when it stops.
    func stop() { connection.close() }

    // MARK: What tests look at

    var calls: [Call] { state.withLock { $0.calls } }
    func calls(_ member: String) -> [Call] { calls.filter { $0.member == member } }
    var applications: [DBusObjectPath: Registration] { state.withLock { $0.applications } }
    var advertisements: [DBusObjectPath: Registration] { state.withLock { $0.advertisements } }

    /// The next `times` calls of `member` on `path` answer `org.bluez.Error.InProgress`.
    func answerInProgress(_ path: DBusObjectPath, _ member: String, times: Int) {
        state.withLock { $0.inProgress["\(path) \(member)"] = times }
    }

    /// As 5.66 after a reconnect: the characteristic's earlier subscription is being re-armed, so the next
    /// StartNotify answers InProgress, and `Notifying` follows all the same.
    func rearmSubscription(_ path: DBusObjectPath) {
        state.withLock { _ = $0.rearming.insert(path) }
    }

    // MARK: Changing objects

    func set(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        guard let handle = state.withLock({ $0.objects[path] }) else { throw DBusError(.invalidValue, "no \(path)") }
        try await handle.set(value, property: name, interface: interface)
    }

    func remove(_ path: DBusObjectPath) async {
        await state.withLock { $0.objects.removeValue(forKey: path) }?.unexport()
    }

    /// Removes an object and everything below it; false if there was no such object.
    private func removeTree(_ root: DBusObjectPath) async -> Bool {
        let handles = state.withLock { state in
            let paths = state.objects.keys.filter { $0 == root || $0.isDescendant(of: root) }
                .sorted { $0.rawValue.count > $1.rawValue.count }
            return paths.compactMap { state.objects.removeValue(forKey: $0) }
        }
        for handle in handles { await handle.unexport() }
        return !handles.isEmpty
    }

    /// A notification (or indication) from the remote device: `Value` changes.
    func notify(_ path: DBusObjectPath, _ value: [UInt8]) async throws {
        state.withLock { $0.values[path] = value }
        try await set(path, "org.bluez.GattCharacteristic1", "Value", .bytes(value))
    }

    private func export(_ path: DBusObjectPath, _ interfaces: [DBusInterface]) async throws {
        let handle = try await connection.export(path, interfaces: interfaces)
        state.withLock { $0.objects[path] = handle }
    }

    /// A method that records each call once handled; `body` may throw the error to reply with.
    private func method(
        _ name: String, input: DBusSignature = "", output: DBusSignature = "",
        _ body: (@Sendable (DBusMethodCall) async throws -> [DBusValue])? = nil
    ) -> (String, DBusMethod) {
        (name, DBusMethod(input: input, output: output) { [weak self] call in
            defer { self?.record(name, call.message.path, call.arguments) }
            if let path = call.message.path, self?.takeInProgress(path, name) == true {
                throw DBusError.reply(name: "org.bluez.Error.InProgress", "In Progress")
            }
            return try await body?(call) ?? []
        })
    }

    private func record(_ member: String, _ path: DBusObjectPath?, _ arguments: [DBusValue]) {
        state.withLock { $0.calls.append(Call(member: member, path: path ?? .root, arguments: arguments)) }
    }

    private func takeInProgress(_ path: DBusObjectPath, _ member: String) -> Bool {
        state.withLock { state in
            guard let left = state.inProgress["\(path) \(member)"], left > 0 else { return false }
            state.inProgress["\(path) \(member)"] = left - 1
            return true
        }
    }

    private static func failed(_ message: String) -> DBusError { .reply(name: "org.bluez.Error.Failed", message) }

    // MARK: Adapters

    private func addAdapter(_ name: String, address: String, powered: Bool) async throws {
        let path = try DBusObjectPath("/org/bluez/\(name)")
        if powered { state.withLock { _ = $0.powered.insert(path) } }
        let adapter = DBusInterface(
            "org.bluez.Adapter1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("SetDiscoveryFilter", input: "a{sv}"),
                method("StartDiscovery") { [weak self] _ in
                    try self?.requirePowered(path)
                    guard self?.state.withLock({ $0.discovering.insert(path).inserted }) == true else {
                        throw DBusError.reply(name: "org.bluez.Error.InProgress", "Operation already in progress")
                    }
                    try await self?.set(path, "org.bluez.Adapter1", "Discovering", .boolean(true))
                    return []
                },
                method("RemoveDevice", input: "o") { [weak self] call in
                    let device: DBusObjectPath = try call.arguments[0].decode()
                    guard device.isDescendant(of: path), await self?.removeTree(device) == true else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
                method("StopDiscovery") { [weak self] _ in
                    try self?.requirePowered(path)
                    guard self?.state.withLock({ $0.discovering.remove(path) }) != nil else {
                        throw Self.failed("No discovery started")
                    }
                    try await self?.set(path, "org.bluez.Adapter1", "Discovering", .boolean(false))
                    return []
                },
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Powered": DBusProperty(.boolean(powered), access: .readWrite) { [weak self] value in
                    let on = value == .boolean(true)
                    self?.setPoweredState(path, on)
                    self?.record("Set Powered", path, [value])
                },
                "Discovering": DBusProperty(.boolean(false)),
            ])
        let gatt = DBusInterface(
            "org.bluez.GattManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterApplication", input: "oa{sv}") { [weak self] call in
                    try await self?.registerApplication(call)
                    return []
                },
                method("UnregisterApplication", input: "o") { [weak self] call in
                    let root: DBusObjectPath = try call.arguments[0].decode()
                    guard self?.state.withLock({ $0.applications.removeValue(forKey: root) }) != nil else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
            ]))
        let advertising = DBusInterface(
            "org.bluez.LEAdvertisingManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterAdvertisement", input: "oa{sv}") { [weak self] call in
                    try await self?.registerAdvertisement(call)
                    return []
                },
                method("UnregisterAdvertisement", input: "o") { [weak self] call in
                    let path: DBusObjectPath = try call.arguments[0].decode()
                    guard self?.state.withLock({ $0.advertisements.removeValue(forKey: path) }) != nil else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
            ]))
        try await export(path, [adapter, gatt, advertising])
    }

    /// Powers an adapter on or off from bluetoothd's side (AutoEnable, rfkill).
    func power(_ adapter: String, _ on: Bool) async throws {
        let path = try DBusObjectPath("/org/bluez/\(adapter)")
        setPoweredState(path, on)
        try await set(path, "org.bluez.Adapter1", "Powered", .boolean(on))
    }

    private func setPoweredState(_ adapter: DBusObjectPath, _ on: Bool) {
        state.withLock { state in
            if on { state.powered.insert(adapter) } else { state.powered.remove(adapter) }
        }
    }

    private func requirePowered(_ adapter: DBusObjectPath) throws {
        guard state.withLock({ $0.powered.contains(adapter) }) else {
            throw DBusError.reply(name: "org.bluez.Error.NotReady", "Resource Not Ready")
        }
    }

    // MARK: Devices

    /// A remote device known to `adapter`. `services` are exported when it first connects.
    @discardableResult
    func addDevice(
        _ adapter: String, _ address: String, uuids: [String] = [], connected: Bool = false,
        services: [RemoteService] = []
    ) async throws -> DBusObjectPath {
        let path = try DBusObjectPath("/org/bluez/\(adapter)/dev_\(address.replacingOccurrences(of: ":", with: "_"))")
        state.withLock {
            $0.pendingServices[path] = services
            if connected { $0.connected.insert(path) }
        }
        let device = DBusInterface(
            "org.bluez.Device1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("Connect") { [weak self] _ in
                    try await self?.connect(path)
                    return []
                },
                method("Disconnect") { [weak self] _ in
                    guard self?.state.withLock({ $0.connected.remove(path) }) != nil else {
                        throw DBusError.reply(name: "org.bluez.Error.NotConnected", "Not Connected")
                    }
                    try await self?.set(path, "org.bluez.Device1", "ServicesResolved", .boolean(false))
                    try await self?.set(path, "org.bluez.Device1", "Connected", .boolean(false))
                    return []
                },
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Adapter": DBusProperty(.objectPath(try DBusObjectPath("/org/bluez/\(adapter)"))),
                "UUIDs": DBusProperty(.strings(uuids)),
                "Connected": DBusProperty(.boolean(connected)),
                "ServicesResolved": DBusProperty(.boolean(false)),
            ])
        try await export(path, [device])
        return path
    }

    private func connect(_ path: DBusObjectPath) async throws {
        let attempt = state.withLock { state in
            state.connectAttempts[path, default: 0] += 1
            return state.connectAttempts[path]!
        }
        let outcome = connectOutcome.withLock { $0 }(attempt)
        if case .fail(let error) = outcome { throw error }
        state.withLock { _ = $0.connected.insert(path) }
        try await set(path, "org.bluez.Device1", "Connected", .boolean(true))
        // 5.66 replies once the link and ATT are up; service discovery follows.
        Task {
            try await Task.sleep(for: .milliseconds(50))
            if case .dropDuringDiscovery = outcome {
                state.withLock { _ = $0.connected.remove(path) }
                try await set(path, "org.bluez.Device1", "Connected", .boolean(false))
                return
            }
            let services = state.withLock { $0.pendingServices.removeValue(forKey: path) } ?? []
            try await addServices(services, to: path)
            try await set(path, "org.bluez.Device1", "ServicesResolved", .boolean(true))
        }
    }

    /// Exports GATT services under `device` as bluetoothd names them (`serviceHHHH/charHHHH`, by handle);
    /// returns the characteristics' paths in order.
    @discardableResult
    func addServices(_ services: [RemoteService], to device: DBusObjectPath) async throws -> [DBusObjectPath] {
        var paths: [DBusObjectPath] = []
        for service in services {
            var handle = state.withLock { state in
                defer { state.nextHandle[device, default: 1] += 1 + service.characteristics.count * 2 }
                return state.nextHandle[device, default: 1]
            }
            let servicePath = try device.appending("service" + hex4(handle))
            try await export(servicePath, [
                DBusInterface("org.bluez.GattService1", properties: [
                    "UUID": DBusProperty(.string(service.uuid)), "Device": DBusProperty(.objectPath(device)),
                    "Primary": DBusProperty(.boolean(true)),
                ])
            ])
            for characteristic in service.characteristics {
                handle += 2
                let path = try servicePath.appending("char" + hex4(handle))
                try await addCharacteristic(characteristic, at: path, service: servicePath)
                paths.append(path)
            }
        }
        return paths
    }

    private func addCharacteristic(
        _ spec: RemoteCharacteristicSpec, at path: DBusObjectPath, service: DBusObjectPath
    ) async throws {
        state.withLock { $0.values[path] = spec.value }
        let interface = DBusInterface(
            "org.bluez.GattCharacteristic1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("ReadValue", input: "a{sv}", output: "ay") { [weak self] call in
                    guard let self else { return [.bytes([])] }
                    let options: [String: DBusValue] = try call.arguments[0].decode()
                    let offset = Int(try options["offset"]?.decode(UInt16.self) ?? 0)
                    let value = state.withLock { $0.values[path] ?? [] }
                    guard offset <= value.count else {
                        throw DBusError.reply(name: "org.bluez.Error.InvalidOffset", "Invalid offset")
                    }
                    try await set(path, "org.bluez.GattCharacteristic1", "Value", .bytes(value))
                    return [.bytes(Array(value[offset...]))]
                },
                method("WriteValue", input: "aya{sv}") { [weak self] call in
                    self?.state.withLock { $0.values[path] = (try? call.arguments[0].decode()) ?? [] }
                    return []
                },
                method("StartNotify") { [weak self] _ in
                    self?.setNotifyingShortly(path, true)
                    if self?.state.withLock({ $0.rearming.remove(path) }) != nil {
                        throw DBusError.reply(name: "org.bluez.Error.InProgress", "In Progress")
                    }
                    return []
                },
                method("StopNotify") { [weak self] _ in
                    self?.setNotifyingShortly(path, false)
                    return []
                },
            ]),
            properties: [
                "UUID": DBusProperty(.string(spec.uuid)), "Service": DBusProperty(.objectPath(service)),
                "Flags": DBusProperty(.strings(spec.flags)), "Value": DBusProperty(.bytes(spec.value)),
                "Notifying": DBusProperty(.boolean(false)), "MTU": DBusProperty(.uint16(517)),
            ])
        try await export(path, [interface])
    }

    /// `Notifying` changes after the reply (the CCC write completes later).
    private func setNotifyingShortly(_ path: DBusObjectPath, _ on: Bool) {
        Task {
            try await Task.sleep(for: .milliseconds(20))
            try await set(path, "org.bluez.GattCharacteristic1", "Notifying", .boolean(on))
        }
    }

    // MARK: Registrations

    private func registerApplication(_ call: DBusMethodCall) async throws {
        let root: DBusObjectPath = try call.arguments[0].decode()
        guard state.withLock({ $0.applications[root] == nil }) else {
            throw DBusError.reply(name: "org.bluez.Error.AlreadyExists", "Already Exists")
        }
        // Read the whole application from the caller before replying.
        let reply = try await connection.call(
            destination: call.sender, path: root, interface: Self.objectManagerInterface, member: "GetManagedObjects",
            timeout: .seconds(5))
        let objects = try reply.argument(expecting: "a{oa{sa{sv}}}").decode(
            [DBusObjectPath: [String: [String: DBusValue]]].self
        ).mapValues { $0.mapValues { $0.mapValues(\.unwrapped) } }
        try Self.validateApplication(objects)
        state.withLock { $0.applications[root] = Registration(owner: call.sender, path: root, objects: objects) }
    }

    /// What bluetoothd needs to build its GATT database: services with UUIDs, characteristics with a UUID,
    /// flags and a `Service` that is one of the application's services.
    private static func validateApplication(_ objects: [DBusObjectPath: [String: [String: DBusValue]]]) throws {
        let services = objects.filter { $0.value["org.bluez.GattService1"] != nil }
        guard !services.isEmpty else { throw failed("No object received") }
        for (_, interfaces) in services {
            guard isUUID(interfaces["org.bluez.GattService1"]?["UUID"]) else { throw failed("Failed to parse UUID") }
        }
        for (path, interfaces) in objects {
            guard let properties = interfaces["org.bluez.GattCharacteristic1"] else { continue }
            guard isUUID(properties["UUID"]), let service = try? properties["Service"]?.decode(DBusObjectPath.self),
                services[service] != nil, path.isDescendant(of: service),
                let flags = try? properties["Flags"]?.decode([String].self), !flags.isEmpty
            else { throw failed("Failed to create entry in database") }
        }
    }

    private static func isUUID(_ value: DBusValue?) -> Bool {
        guard let uuid = try? value?.decode(String.self) else { return false }
        let groups = uuid.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
        return groups == [8, 4, 4, 4, 12] && uuid.allSatisfy { $0 == "-" || $0.isHexDigit }
    }

    private func registerAdvertisement(_ call: DBusMethodCall) async throws {
        let path: DBusObjectPath = try call.arguments[0].decode()
        guard state.withLock({ $0.advertisements[path] == nil }) else {
            throw DBusError.reply(name: "org.bluez.Error.AlreadyExists", "Already Exists")
        }
        // gdbus's client tries the object manager first; an error sends it to Properties.GetAll.
        _ = try? await connection.call(
            destination: call.sender, path: path, interface: Self.objectManagerInterface, member: "GetManagedObjects",
            timeout: .seconds(5))
        let reply = try await connection.call(
            destination: call.sender, path: path, interface: Self.propertiesInterface, member: "GetAll",
            arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(5))
        let properties = try reply.argument(expecting: "a{sv}").decode([String: DBusValue].self).mapValues(\.unwrapped)
        guard properties["Type"] == .string("peripheral") || properties["Type"] == .string("broadcast"),
            properties["ServiceUUIDs"].map({ $0.signature == "as" }) ?? true,
            properties["ServiceData"].map(Self.isServiceData) ?? true
        else { throw Self.failed("Failed to parse advertisement.") }
        let registration = Registration(
            owner: call.sender, path: path, objects: [path: ["org.bluez.LEAdvertisement1": properties]])
        state.withLock { $0.advertisements[path] = registration }
    }

    /// `a{sv}` of UUID to `<ay>`, as `parse_service_data` reads it.
    private static func isServiceData(_ value: DBusValue) -> Bool {
        guard case .dictionary("s", "v", let entries) = value else { return false }
        return entries.allSatisfy { entry in
            guard case .variant(.bytes) = entry.value else { return false }
            return true
        }
    }

    // MARK: Calling a registered application, as for a central's request

    /// The options 5.66 passes with a read or write: always `device`, `mtu` and `link`; `offset` when non-zero.
    static func requestOptions(device: DBusObjectPath, mtu: UInt16, offset: UInt16 = 0) -> DBusValue {
        var options: [String: DBusValue] = ["device": .objectPath(device), "mtu": .uint16(mtu), "link": .string("LE")]
        if offset > 0 { options["offset"] = .uint16(offset) }
        return .stringDictionary(options)
    }

    /// Calls a characteristic of the application registered at `application`.
    func callCharacteristic(
        _ path: DBusObjectPath, of application: Registration, _ member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) -> DBusMessage {
        try await connection.call(
            destination: application.owner, path: path, interface: "org.bluez.GattCharacteristic1", member: member,
            arguments: arguments, timeout: .seconds(5))
    }

    /// What the owner of a registered application now answers to GetManagedObjects, or nil for an error.
    func managedObjects(of application: Registration) async -> [DBusObjectPath: [String: [String: DBusValue]]]? {
        let reply = try? await connection.call(
            destination: application.owner, path: application.path, interface: Self.objectManagerInterface,
            member: "GetManagedObjects", timeout: .seconds(5))
        let objects = try? reply?.argument(expecting: "a{oa{sa{sv}}}").decode(
            [DBusObjectPath: [String: [String: DBusValue]]].self)
        return objects?.mapValues { $0.mapValues { $0.mapValues(\.unwrapped) } }
    }

    /// What the owner of a registered advertisement now answers to GetAll, or nil for an error.
    func advertisementProperties(of advertisement: Registration) async -> [String: DBusValue]? {
        let reply = try? await connection.call(
            destination: advertisement.owner, path: advertisement.path, interface: Self.propertiesInterface,
            member: "GetAll", arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(5))
        return try? reply?.argument(expecting: "a{sv}").decode([String: DBusValue].self).mapValues(\.unwrapped)
    }

    /// PropertiesChanged from one object of the application's owner.
    func propertyChanges(of path: DBusObjectPath, in application: Registration) async throws -> AsyncStream<DBusMessage> {
        try await connection.signals(
            matching: DBusMatchRule(
                sender: application.owner, interface: Self.propertiesInterface, member: "PropertiesChanged", path: path))
    }
}

private func hex4(_ n: Int) -> String {
    let digits = String(n, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
