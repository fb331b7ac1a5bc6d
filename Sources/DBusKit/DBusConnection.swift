import CDBus
import Logging
import Synchronization

/// A connection to a message bus. Safe to use from any task; all traffic goes through the connection's own
/// thread. Close it with `close()`; it also closes when released.
public final class DBusConnection: Sendable {
    /// Which bus to connect to.
    public enum Bus: Sendable, Hashable {
        case system
        case session
        /// A bus at a D-Bus address, e.g. `unix:path=/tmp/test-bus`.
        case address(String)
    }

    /// Our unique name on the bus, e.g. `:1.42`.
    public let uniqueName: String
    public let logger: Logger
    let loop: EventLoop
    // Both used only on the loop thread.
    let router: SignalRouter
    let registry: ObjectRegistry

    private init(loop: EventLoop, uniqueName: String, logger: Logger) {
        self.loop = loop
        self.uniqueName = uniqueName
        self.logger = logger
        self.router = SignalRouter()
        self.registry = ObjectRegistry(logger: logger, emit: { [unowned loop] in loop.send($0) })
    }

    deinit { loop.shutdown() }

    /// Connects and registers with the bus.
    public static func connect(to bus: Bus, logger: Logger = Logger(label: "blepay.dbus")) async throws(DBusError)
        -> DBusConnection
    {
        _ = dbus_threads_init_default()
        let loop = EventLoop(logger: logger)
        try await loop.start { () throws(DBusError) in try open(bus) }
        let name = try await loop.submit { loop in
            String(cString: dbus_bus_get_unique_name(loop.connection!))
        }
        let connection = DBusConnection(loop: loop, uniqueName: name, logger: logger)
        let router = connection.router
        let registry = connection.registry
        loop.execute { loop in
            loop.onMessage = { raw, message in
                if router.route(message) { return true }
                guard message.kind == .methodCall else { return false }
                let request = RawMessage(retaining: raw)
                return registry.handle(message) { result in
                    loop.execute { loop in loop.respond(to: request, with: result) }
                }
            }
            loop.onDisconnect = { router.finishAll() }
        }
        logger.debug("connected to D-Bus", metadata: ["bus": "\(bus)", "name": "\(name)"])
        return connection
    }

    private static func open(_ bus: Bus) throws(DBusError) -> OpaquePointer {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        func failure() -> DBusError {
            let name = error.name.map { String(cString: $0) }
            let message = error.message.map { String(cString: $0) } ?? "cannot connect to \(bus)"
            return DBusError(.connectionFailed, name: name, message)
        }
        switch bus {
        case .system, .session:
            guard let c = dbus_bus_get_private(bus == .system ? DBUS_BUS_SYSTEM : DBUS_BUS_SESSION, &error) else {
                throw failure()
            }
            return c
        case .address(let address):
            guard let c = dbus_connection_open_private(address, &error) else { throw failure() }
            guard dbus_bus_register(c, &error) != 0 else {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                throw failure()
            }
            return c
        }
    }

    /// Closes the connection: pending calls fail with `disconnected`, signal streams finish.
    public func close() { loop.shutdown() }

    // MARK: Calls

    /// Calls a method and returns its reply. An error reply throws `remote` with the error's name and message;
    /// no reply within `timeout` throws `timeout`; cancelling the task while it waits throws `cancelled`. A task
    /// cancelled before it calls is still answered: that is how a stopping service cleans up (it unregisters its
    /// advertisement and GATT application after its task was cancelled).
    public func call(
        destination: String?, path: DBusObjectPath, interface: String, member: String,
        arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> DBusMessage {
        let message = try RawMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        let id = loop.makeCallID()
        let loop = self.loop
        let result: Result<DBusMessage, DBusError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute(
                    { loop in loop.sendCall(message, id: id, timeout: timeout, continuation: continuation) },
                    onClosed: {
                        continuation.resume(returning: .failure(DBusError(.disconnected, "connection is closed")))
                    })
            }
        } onCancel: {
            loop.execute { loop in loop.failCall(id, DBusError(.cancelled, "\(interface).\(member) was cancelled")) }
        }
        return try result.get()
    }

    /// Emits a signal from one of our objects.
    public func emitSignal(
        path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = []
    ) throws(DBusError) {
        let message = try RawMessage.signal(path: path, interface: interface, member: member, arguments: arguments)
        loop.execute { loop in loop.send(message) }
    }

    // MARK: Signals

    /// Subscribes to the signals `rule` selects. Once this returns, the bus has the rule: every matching
    /// signal sent after that is delivered, in order. The subscription ends when the stream is dropped
    /// or the connection closes.
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> AsyncStream<DBusMessage> {
        try await signals(matching: [rule])
    }

    /// Subscribes to the signals any of `rules` selects, as one stream in the order the bus sent them; a signal
    /// several rules match is delivered once. `keep` runs on the connection's thread as each matching signal
    /// arrives, so that one it turns away wakes no task; it must be quick.
    public func signals(
        matching rules: [DBusMatchRule], keeping keep: @escaping @Sendable (DBusMessage) -> Bool = { _ in true }
    ) async throws(DBusError) -> AsyncStream<DBusMessage> {
        for name in Set(rules.compactMap(\.wellKnownSender)) { try await trackOwner(of: name) }
        let (stream, continuation) = AsyncStream<DBusMessage>.makeStream()
        let id = loop.makeCallID()
        let router = self.router
        try await loop.submit { _ in router.add(id, rules: rules, keep: keep, continuation: continuation) }
        for (index, rule) in rules.enumerated() {
            do {
                try await addMatch(rule)
            } catch {
                // The bus counts equal rules, so only those added here are removed.
                unsubscribe(id, added: index)
                continuation.finish()
                throw error
            }
        }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    private func unsubscribe(_ id: UInt64, added: Int = .max) {
        let router = self.router
        loop.execute { loop in
            for rule in router.remove(id).prefix(added) {
                guard let message = try? RawMessage.methodCall(
                    destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "RemoveMatch",
                    arguments: [.string(rule.description)])
                else { continue }
                loop.send(message)
            }
        }
    }

    private func addMatch(_ rule: DBusMatchRule) async throws(DBusError) {
        _ = try await callBus("AddMatch", [.string(rule.description)])
    }

    /// Starts following the owner of a well-known name so that rules naming it as sender match locally.
    private func trackOwner(of name: String) async throws(DBusError) {
        let router = self.router
        guard try await loop.submit({ _ in router.track(name) }) else { return }
        try await addMatch(
            DBusMatchRule(
                sender: Self.busName, interface: Self.busName, member: "NameOwnerChanged", path: Self.busPath,
                arguments: [0: name]))
        let owner: String?
        do {
            owner = try await callBus("GetNameOwner", [.string(name)]).arguments.first?.decode(String.self)
        } catch where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            owner = nil
        }
        try await loop.submit { _ in router.setOwner(owner, of: name) }
    }

    // MARK: Names

    /// Becomes the primary owner of a well-known name, or throws `nameNotAcquired` if someone else has it.
    public func requestName(_ name: String) async throws(DBusError) {
        guard dbus_validate_bus_name(name, nil) != 0, !name.hasPrefix(":") else {
            throw DBusError(.invalidValue, "invalid well-known name '\(name)'")
        }
        // DBUS_NAME_FLAG_DO_NOT_QUEUE: fail now rather than wait in line.
        let reply = try await callBus("RequestName", [.string(name), .uint32(4)])
        let code = try reply.argument(expecting: "u").decode(UInt32.self)
        // 1: primary owner now; 4: we own it already.
        guard code == 1 || code == 4 else {
            throw DBusError(.nameNotAcquired, "\(name) is owned by another connection")
        }
    }

    public func releaseName(_ name: String) async throws(DBusError) {
        _ = try await callBus("ReleaseName", [.string(name)])
    }

    /// The unique name of the owner of `name`, or nil when nobody owns it.
    public func nameOwner(_ name: String) async throws(DBusError) -> String? {
        do {
            return try await callBus("GetNameOwner", [.string(name)]).argument(expecting: "s").decode(String.self)
        } catch where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }

    /// A call to the bus and its answer within `timeout`: proof that this connection's event loop turns. It asks
    /// the bus for its id: the system bus's policy refuses `org.freedesktop.DBus.Peer.Ping` to it, even from root.
    public func ping(timeout: Duration) async throws(DBusError) {
        _ = try await call(destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "GetId",
            timeout: timeout)
    }

    static let busName = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    private func callBus(_ member: String, _ arguments: [DBusValue]) async throws(DBusError) -> DBusMessage {
        try await call(destination: Self.busName, path: Self.busPath, interface: Self.busName, member: member,
            arguments: arguments)
    }

    // MARK: Objects

    /// Exports an object. With `objectManager`, it answers `GetManagedObjects` for everything below it and
    /// announces objects exported or removed below it later. Objects below an object manager announce
    /// themselves through it.
    public func export(
        _ path: DBusObjectPath, interfaces: [DBusInterface], objectManager: Bool = false
    ) async throws(DBusError) -> DBusObjectHandle {
        let token = loop.makeCallID()
        let object = ObjectRegistry.Object(
            interfaces: Dictionary(interfaces.map { ($0.name, $0) }, uniquingKeysWith: { $1 }),
            isObjectManager: objectManager, token: token)
        let registry = self.registry
        try await loop.submit { _ throws(DBusError) in try registry.add(path, object) }
        return DBusObjectHandle(connection: self, path: path, token: token)
    }
}

extension EventLoop {
    /// Sends the reply to a method call, unless the caller asked for none.
    func respond(to request: RawMessage, with result: Result<[DBusValue], DBusError>) {
        guard !request.noReplyExpected else { return }
        switch result {
        case .success(let values):
            do {
                send(try request.methodReturn(values))
            } catch {
                send(request.errorReply(name: DBusError.failedName, message: error.message))
            }
        case .failure(let error):
            send(request.errorReply(name: error.name ?? DBusError.failedName, message: error.message))
        }
    }
}

/// An exported object. `unexport()` removes it; properties change through `set`.
public final class DBusObjectHandle: Sendable {
    public let path: DBusObjectPath
    private let connection: DBusConnection
    private let token: UInt64

    init(connection: DBusConnection, path: DBusObjectPath, token: UInt64) {
        self.connection = connection
        self.path = path
        self.token = token
    }

    /// Changes a property's value and emits `PropertiesChanged` (for a GATT characteristic's `Value`,
    /// that is a notification).
    public func set(_ value: DBusValue, property: String, interface: String) async throws(DBusError) {
        let (registry, path, token) = (connection.registry, path, token)
        try await connection.loop.submit { _ throws(DBusError) in
            try registry.set(value, property: property, interface: interface, at: path, token: token)
        }
    }

    /// Emits a signal from this object.
    public func emitSignal(interface: String, member: String, arguments: [DBusValue] = []) throws(DBusError) {
        try connection.emitSignal(path: path, interface: interface, member: member, arguments: arguments)
    }

    /// Removes the object; an object manager above it announces `InterfacesRemoved`.
    public func unexport() async {
        let (registry, path, token) = (connection.registry, path, token)
        _ = try? await connection.loop.submit { _ in registry.remove(path, token: token) }
    }
}
