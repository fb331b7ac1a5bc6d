import DBusKit
import Synchronization

/// Keeps something registered with bluetoothd: registers it now, and again each time bluetoothd restarts
/// (once the adapter is back), until `cancel()`.
final class Registration: Sendable {
    typealias Action = @Sendable () async throws(BlueZError) -> Void

    private let watcher = Mutex<Task<Void, Never>?>(nil)
    private let unregister: Action

    init(adapter: Adapter, what: String, register: @escaping Action, unregister: @escaping Action)
        async throws(BlueZError)
    {
        self.unregister = unregister
        let session = adapter.session
        let restarts = session.changes { event -> Void? in
            guard case .restarted = event else { return nil }
            return ()
        }
        try await register()
        let task = Task {
            for await _ in restarts {
                for attempt in 1...5 {
                    do throws(BlueZError) {
                        _ = try await session.wait("adapter \(adapter.name)", timeout: .seconds(10)) { _ -> Bool? in
                            adapter.isPowered ? true : nil
                        }
                        try await register()
                        session.logger.info("registered again after bluetoothd restarted", metadata: ["what": "\(what)"])
                        break
                    } catch {
                        session.logger.warning(
                            "registration after bluetoothd restart failed",
                            metadata: ["what": "\(what)", "attempt": "\(attempt)", "error": "\(error)"])
                        try? await Task.sleep(for: .milliseconds(500 * attempt))
                    }
                }
            }
        }
        watcher.withLock { $0 = task }
    }

    /// Registers `object` with a BlueZ manager interface on the adapter (`RegisterApplication`,
    /// `RegisterAdvertisement`, …) and unregisters it with the matching `Unregister…` method.
    convenience init(adapter: Adapter, object: DBusObjectPath, manager: String, member: String)
        async throws(BlueZError)
    {
        let (session, adapterPath) = (adapter.session, adapter.path)
        try await self.init(
            adapter: adapter, what: "\(member) \(object)",
            register: { () throws(BlueZError) in
                _ = try await session.call(
                    adapterPath, manager, "Register\(member)", [.objectPath(object), .stringDictionary([:])])
            },
            unregister: { () throws(BlueZError) in
                _ = try await session.call(adapterPath, manager, "Unregister\(member)", [.objectPath(object)])
            })
    }

    /// Stops re-registering and unregisters; unregistering what bluetoothd no longer has is not an error.
    func cancel() async {
        watcher.withLock { $0?.cancel() }
        try? await unregister()
    }

    deinit { watcher.withLock { $0?.cancel() } }
}

/// Unique object paths for what this process exports to bluetoothd.
enum ExportPaths {
    private static let counter = Atomic<Int>(0)

    static func next(_ kind: String) -> DBusObjectPath {
        let n = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return try! DBusObjectPath("/org/blepay/\(kind)\(n)")  // only [a-z0-9] in kind: always valid
    }
}

/// Exports with BlueZ's error mapping.
func export(_ session: BlueZSession, _ path: DBusObjectPath, _ interfaces: [DBusInterface], objectManager: Bool = false)
    async throws(BlueZError) -> DBusObjectHandle
{
    try await bluez { () throws(DBusError) in
        try await session.connection.export(path, interfaces: interfaces, objectManager: objectManager)
    }
}
