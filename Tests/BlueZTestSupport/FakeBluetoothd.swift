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
///   StopDiscovery without a discovery fails ("No discovery started"). Powering off stops discovery and drops
///   every link of the adapter.
/// - Device1: Connect brings the link up (`Connected`), replies, then discovers services (exporting those not
///   exported yet) and sets `ServicesResolved`, unless the device's `ConnectOutcome` says otherwise. Disconnect
///   without a link answers `NotConnected`. A link that goes down clears `ServicesResolved`, then `Connected`.
/// - GattCharacteristic1 of a remote device: reads return what was last written or notified, and also update
///   `Value` (as 5.66 does); writes go to the characteristic's `onWrite`, as the remote peripheral's GATT server;
///   StartNotify replies, then sets `Notifying`; any method can be made to answer `InProgress` first
///   (`answerInProgress`, `rearmSubscription`).
/// - RegisterApplication reads the application with GetManagedObjects, RegisterAdvertisement tries
///   GetManagedObjects and then reads Properties.GetAll, from the caller before replying; both refuse what
///   bluetoothd refuses (`AlreadyExists`, `Failed` for an unusable tree or advertisement).
/// - Centrals (`connectCentral`) use a registered application as bluetoothd does for a remote central: reads and
///   writes with `device`, `mtu` and `link` options, StartNotify on the first subscription and StopNotify when the
///   last subscriber unsubscribes or disconnects, notifications cut to MTU−3 bytes.
///
/// Every method call is recorded once handled, so a test that sees a call also sees its effects.
public final class FakeBluetoothd: Sendable {
    /// A method call bluetoothd answered; a property set through Properties.Set is `Set <name>`.
    public struct Call: Sendable, Hashable {
        public let member: String
        public let path: DBusObjectPath
        public let arguments: [DBusValue]

        public init(member: String, path: DBusObjectPath, arguments: [DBusValue]) {
            self.member = member
            self.path = path
            self.arguments = arguments
        }
    }

    /// What one `Device1.Connect` does.
    public enum ConnectOutcome: Sendable {
        /// Link up, reply, services resolved shortly after.
        case connect
        /// An error reply; no link.
        case fail(DBusError)
        /// Link up and reply, then the link is lost during service discovery.
        case dropDuringDiscovery
        /// Link up and reply, then service discovery never ends (5.66 gives up when ATT times out after 30 s; the
        /// stand-in leaves it to the client).
        case stallDiscovery
    }

    public struct RemoteService: Sendable {
        public var uuid: String
        public var characteristics: [RemoteCharacteristicSpec]

        public init(uuid: String, characteristics: [RemoteCharacteristicSpec]) {
            self.uuid = uuid
            self.characteristics = characteristics
        }
    }

    public struct RemoteCharacteristicSpec: Sendable {
        /// What the remote GATT server does with a written value; a thrown `DBusError` is the reply.
        public typealias WriteHandler = @Sendable ([UInt8]) async throws -> Void

        public var uuid: String
        public var value: [UInt8]
        public var flags: [String]
        public var onWrite: WriteHandler?

        public init(
            uuid: String, value: [UInt8] = [], flags: [String] = ["read", "write", "notify"], onWrite: WriteHandler? = nil
        ) {
            self.uuid = uuid
            self.value = value
            self.flags = flags
            self.onWrite = onWrite
        }
    }

    /// An application or advertisement as bluetoothd read it from its owner before replying.
    public struct Registration: Sendable {
        public let owner: String
        public let path: DBusObjectPath
        /// An application's GetManagedObjects; for an advertisement, its GetAll as its only object.
        public let objects: [DBusObjectPath: [String: [String: DBusValue]]]

        public var advertisement: [String: DBusValue] { objects[path]?["org.bluez.LEAdvertisement1"] ?? [:] }

        /// The path of an application's characteristic.
        public func characteristic(_ uuid: String) -> DBusObjectPath? {
            objects.first { $0.value["org.bluez.GattCharacteristic1"]?["UUID"] == .string(uuid) }?.key
        }
    }

    /// What happened to a central's link, in the order the stand-in saw it.
    public enum LinkEvent: Sendable, Hashable {
        /// A central's write to an application was answered: `error` is the D-Bus error's name, nil for success.
        case writeAnswered(DBusObjectPath, error: String?)
        /// `Device1.Disconnect` was called while `unansweredWrites` of the central's writes waited for their reply.
        /// 5.66 drops a write still pending when its link goes down, and the reply that comes later is lost. A reply
        /// that reaches the stand-in a moment before the Disconnect may still count here, as a write bluetoothd has
        /// sent may not yet have reached the application: the application has to leave time between them.
        case disconnectCalled(DBusObjectPath, unansweredWrites: Int)
    }

    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"

    public let connection: DBusConnection
    /// What `Device1.Connect` does, by the device's call number (from 1), for devices added without their own.
    public let connectOutcome = Mutex<@Sendable (Int) -> ConnectOutcome>({ _ in .connect })

    struct State {
        var calls: [Call] = []
        var objects: [DBusObjectPath: DBusObjectHandle] = [:]
        var powered: Set<DBusObjectPath> = []
        var discovering: Set<DBusObjectPath> = []
        var connected: Set<DBusObjectPath> = []
        var connectAttempts: [DBusObjectPath: Int] = [:]
        var connectOutcomes: [DBusObjectPath: @Sendable (Int) -> ConnectOutcome] = [:]
        var linkObservers: [DBusObjectPath: @Sendable (Bool) -> Void] = [:]
        /// Services of devices, exported at the first connection.
        var pendingServices: [DBusObjectPath: [RemoteService]] = [:]
        var nextHandle: [DBusObjectPath: Int] = [:]
        var values: [DBusObjectPath: [UInt8]] = [:]
        /// Remote characteristics' UUIDs by path.
        var characteristics: [DBusObjectPath: String] = [:]
        /// "path member" → how many more calls answer InProgress.
        var inProgress: [String: Int] = [:]
        /// Characteristics whose earlier subscription is being re-armed.
        var rearming: Set<DBusObjectPath> = []
        var applications: [DBusObjectPath: Registration] = [:]
        var advertisements: [DBusObjectPath: Registration] = [:]
        /// Run once, when the next advertisement is registered and before its registration is answered.
        var onAdvertised: (@Sendable () async throws -> Void)?
        /// An application's characteristic → the centrals subscribed to it.
        var subscribers: [DBusObjectPath: Set<DBusObjectPath>] = [:]
        /// A central → its writes sent to an application and not answered yet.
        var unansweredWrites: [DBusObjectPath: Int] = [:]
        var linkEvents: [LinkEvent] = []
    }

    let state = Mutex(State())

    /// Exports the adapters (powered or not, as with `AutoEnable`), lets `prepare` add more objects, then takes
    /// `org.bluez`: a client sees everything at once, as when bluetoothd starts.
    public init(
        bus: TestBus, adapters: [String] = ["hci0", "hci1"], powered: Bool = false,
        prepare: (FakeBluetoothd) async throws -> Void = { _ in }
    ) async throws {
        connection = try await bus.connect()
        _ = try await connection.export(.root, interfaces: [], objectManager: true)
        for (index, name) in adapters.enumerated() {
            try await addAdapter(name, address: "00:AA:01:0\(index):00:00", powered: powered)
        }
        try await prepare(self)
        try await Self.takeName(on: connection)
    }

    /// Takes `org.bluez`, which one stopped just before owns until the bus has seen its connection close.
    private static func takeName(on connection: DBusConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do throws(DBusError) {
                try await connection.requestName("org.bluez")
                return
            } catch {
                guard error.code == .nameNotAcquired, ContinuousClock.now < deadline else { throw error }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Leaves the bus, as bluetoothd does when it stops.
    public func stop() { connection.close() }

    // MARK: What tests look at

    public var calls: [Call] { state.withLock { $0.calls } }
    public func calls(_ member: String) -> [Call] { calls.filter { $0.member == member } }
    public var applications: [DBusObjectPath: Registration] { state.withLock { $0.applications } }
    public var advertisements: [DBusObjectPath: Registration] { state.withLock { $0.advertisements } }
    public var linkEvents: [LinkEvent] { state.withLock { $0.linkEvents } }
    public func isConnected(_ device: DBusObjectPath) -> Bool { state.withLock { $0.connected.contains(device) } }

    /// Runs `body` once, as soon as the next advertisement is registered: before its client hears that it is.
    public func whenAdvertised(_ body: @escaping @Sendable () async throws -> Void) {
        state.withLock { $0.onAdvertised = body }
    }

    /// The next `times` calls of `member` on `path` answer `org.bluez.Error.InProgress`.
    public func answerInProgress(_ path: DBusObjectPath, _ member: String, times: Int) {
        state.withLock { $0.inProgress["\(path) \(member)"] = times }
    }

    /// As 5.66 after a reconnect: the characteristic's earlier subscription is being re-armed, so the next
    /// StartNotify answers InProgress, and `Notifying` follows all the same.
    public func rearmSubscription(_ path: DBusObjectPath) {
        state.withLock { _ = $0.rearming.insert(path) }
    }

    // MARK: Changing objects

    public func set(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        guard let handle = state.withLock({ $0.objects[path] }) else { throw DBusError(.invalidValue, "no \(path)") }
        try await handle.set(value, property: name, interface: interface)
    }

    public func remove(_ path: DBusObjectPath) async {
        await state.withLock { $0.objects.removeValue(forKey: path) }?.unexport()
    }

    /// Removes an object and everything below it; false if there was no such object.
    func removeTree(_ root: DBusObjectPath) async -> Bool {
        let handles = state.withLock { state in
            let paths = state.objects.keys.filter { $0 == root || $0.isDescendant(of: root) }
                .sorted { $0.rawValue.count > $1.rawValue.count }
            // A device added again is a new object: its GATT handles and connection attempts start afresh.
            for path in paths {
                state.values[path] = nil
                state.characteristics[path] = nil
                state.nextHandle[path] = nil
                state.connectAttempts[path] = nil
            }
            return paths.compactMap { state.objects.removeValue(forKey: $0) }
        }
        for handle in handles { await handle.unexport() }
        return !handles.isEmpty
    }

    func export(_ path: DBusObjectPath, _ interfaces: [DBusInterface]) async throws {
        let handle = try await connection.export(path, interfaces: interfaces)
        state.withLock { $0.objects[path] = handle }
    }

    /// A method that records each call once handled; `body` may throw the error to reply with.
    func method(
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

    func record(_ member: String, _ path: DBusObjectPath?, _ arguments: [DBusValue]) {
        state.withLock { $0.calls.append(Call(member: member, path: path ?? .root, arguments: arguments)) }
    }

    private func takeInProgress(_ path: DBusObjectPath, _ member: String) -> Bool {
        state.withLock { state in
            guard let left = state.inProgress["\(path) \(member)"], left > 0 else { return false }
            state.inProgress["\(path) \(member)"] = left - 1
            return true
        }
    }

    static func failed(_ message: String) -> DBusError { .reply(name: "org.bluez.Error.Failed", message) }
}
