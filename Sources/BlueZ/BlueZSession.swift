import DBusKit
import Logging
import Synchronization

/// A client of bluetoothd: a mirror of its objects (all of them, or one adapter's) and their properties (signal
/// strength aside), kept current from `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged`, and a stream
/// of those changes for the adapters, devices and characteristics built on it. When bluetoothd restarts, the mirror
/// is reloaded and `restarted` is announced so that registrations can be made again.
public final class BlueZSession: Sendable {
    /// One change to the mirror, in the order bluetoothd sent it.
    public enum Event: Sendable {
        case added(DBusObjectPath, interfaces: [String: [String: DBusValue]])
        case removed(DBusObjectPath, interfaces: [String])
        case changed(DBusObjectPath, interface: String, values: [String: DBusValue])
        /// bluetoothd has (re)appeared on the bus and the mirror was reloaded.
        case restarted
        /// bluetoothd left the bus; every object is gone.
        case vanished
    }

    typealias Objects = [DBusObjectPath: [String: [String: DBusValue]]]

    private struct State {
        var objects: Objects = [:]
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
    }

    /// One stream's end of a subscription: what it takes of each event, and its finish.
    private struct Subscriber {
        let deliver: @Sendable (Event) -> Void
        let finish: @Sendable () -> Void
    }

    public let connection: DBusConnection
    public let logger: Logger
    /// The one adapter this session follows (its path), or nil for all of them.
    public let scope: DBusObjectPath?
    private let state = Mutex(State())
    /// Held while an event is applied and handed out, so that subscribers see events in mirror order. Never taken
    /// by a stream's termination (`state` is): a subscriber cancelled while an event is yielded to it holds its
    /// task's lock and waits for `state`, which the yield therefore must not hold.
    private let publishing = Mutex(())
    private let watcher = Mutex<Task<Void, Never>?>(nil)

    /// Connects to a bus (the system bus by default) and loads bluetoothd's objects: all of them, or with `adapter`
    /// (e.g. `hci0`) that adapter's alone, so that what bluetoothd does on other adapters wakes nothing here.
    public static func connect(
        to bus: DBusConnection.Bus = .system, adapter: String? = nil, logger: Logger = Logger(label: "blepay.bluez")
    ) async throws(BlueZError) -> BlueZSession {
        let scope = try adapter.map { name throws(BlueZError) in try bluezPath("/org/bluez/\(name)") }
        let connection = try await bluez { () throws(DBusError) in try await DBusConnection.connect(to: bus, logger: logger) }
        return try await BlueZSession(connection: connection, scope: scope, logger: logger)
    }

    public init(connection: DBusConnection, scope: DBusObjectPath? = nil, logger: Logger) async throws(BlueZError) {
        self.connection = connection
        self.logger = logger
        self.scope = scope
        // One stream for everything followed keeps object and property signals in their original order.
        let signals = try await bluez { () throws(DBusError) in
            try await connection.signals(matching: Self.rules(scope), keeping: { !Self.changesSignalStrengthOnly($0) })
        }
        let owners = try await bluez { () throws(DBusError) in
            try await connection.signals(
                matching: DBusMatchRule(
                    sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                    arguments: [0: BlueZ.service]))
        }
        try? await reload()
        let task = Task { [weak self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [weak self] in
                    for await message in signals { self?.apply(message) }
                }
                group.addTask { [weak self] in
                    for await message in owners { await self?.ownerChanged(message) }
                }
            }
        }
        watcher.withLock { $0 = task }
    }

    /// Everything bluetoothd sends, or what concerns one adapter: signals from its objects, and the object
    /// manager's (at `/`) naming it or an object below it.
    private static func rules(_ scope: DBusObjectPath?) -> [DBusMatchRule] {
        guard let scope else { return [DBusMatchRule(sender: BlueZ.service)] }
        let manager = DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, path: .root)
        var adapter = manager, below = manager
        adapter.argumentPaths = [0: scope.rawValue]
        below.argumentPaths = [0: scope.rawValue + "/"]
        return [DBusMatchRule(sender: BlueZ.service, pathNamespace: scope), adapter, below]
    }

    /// Whether a signal changes nothing but a device's `RSSI`. The mirror does not follow signal strength, which
    /// nothing here reads: a scanning adapter reports it for every advertiser in range each time the kernel restarts
    /// the scan (every 10.24 s), and with a discovery filter set BlueZ 5.66 signals it changed or not. Decided on the
    /// connection's thread, so that such a signal wakes no task.
    private static func changesSignalStrengthOnly(_ message: DBusMessage) -> Bool {
        guard message.member == "PropertiesChanged", message.interface == BlueZ.propertiesInterface,
            message.arguments.count == 3, case .string(BlueZ.deviceInterface) = message.arguments[0],
            let changed = try? message.arguments[1].decode([String: DBusValue].self),
            let invalidated = try? message.arguments[2].decode([String].self)
        else { return false }
        return invalidated.isEmpty && changed.keys.allSatisfy { $0 == "RSSI" }
    }

    deinit {
        watcher.withLock { $0?.cancel() }
        connection.close()
    }

    /// Stops following bluetoothd and closes the connection.
    public func close() {
        watcher.withLock { $0?.cancel() }
        connection.close()
        let subscribers = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return state.subscribers.values
        }
        for s in subscribers { s.finish() }
    }

    // MARK: Mirror

    /// Changes from now on. Subscribe before reading the current state, so that nothing falls in between.
    public func events() -> AsyncStream<Event> { changes { $0 } }

    /// The events `transform` maps to a value, as a stream of those values. `transform` runs as each event is
    /// applied to the mirror, in order, so that an event nobody wants wakes no task, and a wanted one reaches its
    /// reader without a task in between. It must be quick and must not wait on the session.
    public func changes<T: Sendable>(_ transform: @escaping @Sendable (Event) -> T?) -> AsyncStream<T> {
        let (stream, continuation) = AsyncStream<T>.makeStream()
        let subscriber = Subscriber(
            deliver: { event in if let value = transform(event) { continuation.yield(value) } },
            finish: { continuation.finish() })
        let id = state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = subscriber
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// The properties of one interface of one object, as last seen.
    public func properties(_ path: DBusObjectPath, _ interface: String) -> [String: DBusValue]? {
        state.withLock { $0.objects[path]?[interface] }
    }

    /// Paths of the objects that have `interface`, under `root` if given, sorted.
    public func paths(with interface: String, under root: DBusObjectPath? = nil) -> [DBusObjectPath] {
        state.withLock { state in
            state.objects.filter { $0.value[interface] != nil && (root.map($0.key.isDescendant(of:)) ?? true) }
                .keys.sorted()
        }
    }

    func property<T: DBusDecodable>(_ path: DBusObjectPath, _ interface: String, _ name: String, as: T.Type = T.self)
        -> T?
    {
        properties(path, interface)?[name].flatMap { try? $0.decode(T.self) }
    }

    private func reload() async throws(BlueZError) {
        let reply = try await bluez { () throws(DBusError) in
            try await connection.call(
                destination: BlueZ.service, path: .root, interface: BlueZ.objectManagerInterface,
                member: "GetManagedObjects")
        }
        let objects = try await bluez { () throws(DBusError) in
            try reply.argument(expecting: "a{oa{sa{sv}}}").decode(Objects.self)
        }
        let followed = scope.map { scope in objects.filter { $0.key == scope || $0.key.isDescendant(of: scope) } } ?? objects
        // Values as signals leave them: without their variants.
        state.withLock { $0.objects = followed.mapValues { $0.mapValues { $0.mapValues(\.unwrapped) } } }
    }

    private func apply(_ message: DBusMessage) {
        let event: Event
        do throws(DBusError) {
            switch (message.interface, message.member) {
            case (BlueZ.objectManagerInterface, "InterfacesAdded"):
                let args = try message.arguments(expecting: "oa{sa{sv}}")
                event = .added(try args[0].decode(), interfaces: try args[1].decode())
            case (BlueZ.objectManagerInterface, "InterfacesRemoved"):
                let args = try message.arguments(expecting: "oas")
                event = .removed(try args[0].decode(), interfaces: try args[1].decode())
            case (BlueZ.propertiesInterface, "PropertiesChanged"):
                guard let path = message.path else { return }
                let args = try message.arguments(expecting: "sa{sv}as")
                let values: [String: DBusValue] = try args[1].decode()
                event = .changed(path, interface: try args[0].decode(), values: values.mapValues(\.unwrapped))
            default:
                return
            }
        } catch {
            logger.warning("ignoring malformed signal from bluetoothd", metadata: ["error": "\(error)"])
            return
        }
        publish(event)
    }

    private func ownerChanged(_ message: DBusMessage) async {
        guard message.arguments.count == 3, case .string(let newOwner) = message.arguments[2] else { return }
        if newOwner.isEmpty {
            logger.warning("bluetoothd left the bus")
            state.withLock { $0.objects.removeAll() }
            publish(.vanished)
            return
        }
        logger.info("bluetoothd is on the bus", metadata: ["owner": "\(newOwner)"])
        do {
            try await reload()
            publish(.restarted)
        } catch {
            logger.error("cannot reload bluetoothd objects", metadata: ["error": "\(error)"])
        }
    }

    /// Applies an event to the mirror and hands it to every subscriber, one event at a time so that subscribers
    /// see events in mirror order.
    private func publish(_ event: Event) {
        logger.trace("bluetoothd event", metadata: ["event": "\(event)"])
        publishing.withLock { _ in
            for subscriber in mirror(event) { subscriber.deliver(event) }
        }
    }

    /// Applies an event to the mirror; returns the subscribers to hand it to.
    private func mirror(_ event: Event) -> [Subscriber] {
        state.withLock { state in
            switch event {
            case .added(let path, let interfaces):
                for (name, props) in interfaces {
                    state.objects[path, default: [:]][name, default: [:]].merge(props.mapValues(\.unwrapped)) { $1 }
                }
            case .removed(let path, let interfaces):
                for name in interfaces { state.objects[path]?[name] = nil }
                if state.objects[path]?.isEmpty == true { state.objects[path] = nil }
            case .changed(let path, let interface, let values):
                if state.objects[path]?[interface] != nil {
                    state.objects[path]![interface]!.merge(values) { $1 }
                }
            case .restarted, .vanished:
                break
            }
            return Array(state.subscribers.values)
        }
    }

    // MARK: Adapters

    /// All adapters, sorted by path.
    public func adapters() -> [Adapter] {
        paths(with: BlueZ.adapterInterface).map { Adapter(session: self, path: $0) }
    }

    /// The adapter called `name` (e.g. `hci0`).
    public func adapter(named name: String) throws(BlueZError) -> Adapter {
        let path = try bluezPath("/org/bluez/\(name)")
        guard properties(path, BlueZ.adapterInterface) != nil else {
            throw BlueZError(.notFound, "no adapter \(name)")
        }
        return Adapter(session: self, path: path)
    }

    // MARK: Helpers for the object types

    /// Waits until `check` returns a value, for at most `timeout`. `check` runs once at once (with no event)
    /// and again after every change (with that event), so it can judge both state and transitions.
    func wait<T: Sendable>(
        _ what: String, timeout: Duration, _ check: @escaping @Sendable (Event?) throws(BlueZError) -> T?
    ) async throws(BlueZError) -> T {
        let events = self.events()
        if let value = try check(nil) { return value }
        return try await withTimeout(timeout, what) { () throws(BlueZError) -> T in
            for await event in events {
                if let value = try check(event) { return value }
            }
            throw BlueZError(.unavailable, "BlueZ session closed while waiting for \(what)")
        }
    }

    func call(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(BlueZError) -> DBusMessage {
        try await bluez { () throws(DBusError) in
            try await connection.call(
                destination: BlueZ.service, path: path, interface: interface, member: member, arguments: arguments,
                timeout: timeout)
        }
    }

    func setProperty(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue)
        async throws(BlueZError)
    {
        _ = try await call(path, BlueZ.propertiesInterface, "Set", [.string(interface), .string(name), .variant(value)])
    }
}

func bluezPath(_ raw: String) throws(BlueZError) -> DBusObjectPath {
    do { return try DBusObjectPath(raw) } catch { throw BlueZError(.notFound, "invalid object path \(raw)") }
}

/// Runs `operation`, throwing `timeout` if it has not finished after `timeout`.
func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws(BlueZError) -> T
) async throws(BlueZError) -> T {
    let result = await withTaskGroup(of: Result<T, BlueZError>?.self) { group in
        group.addTask {
            do throws(BlueZError) { return .success(try await operation()) } catch { return .failure(error) }
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    guard let result else { throw BlueZError(.timeout, "\(what) did not happen within \(timeout)") }
    return try result.get()
}
