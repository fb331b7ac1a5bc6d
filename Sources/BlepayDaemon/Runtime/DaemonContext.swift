import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayLedgerClient
import BlepayProtocol
import BlueZ
import CoreMetrics
import DBusKit
import Foundation
import Logging

/// What both daemons have before they serve: their configuration, the device's identity (enrolled with the
/// ledger), its state file, a ledger client that signs as the device, the adapter through BlueZ, and the bus
/// connection the control API is served on.
public struct DaemonContext: Sendable {
    public let configuration: DaemonConfiguration
    public let logger: Logger
    public let identity: DeviceIdentity
    public let store: DaemonStore
    public let ledger: LedgerClient
    public let adapter: Adapter
    public let control: DBusConnection
    public let clock: @Sendable () -> Timestamp
    public let metrics: DaemonMetrics

    /// How long to wait at start for bluetoothd to show the configured adapter.
    static let adapterTimeout: Duration = .seconds(30)

    public static func open(
        _ configuration: DaemonConfiguration, bus: DBusConnection.Bus = .system, logger: Logger,
        metrics: (any MetricsFactory)? = nil, clock: @escaping @Sendable () -> Timestamp = DaemonContext.systemClock
    ) async throws(DaemonError) -> DaemonContext {
        let client: LedgerClient
        do {
            try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true)
            client = LedgerClient(
                baseURL: configuration.ledgerURL, credentials: .none,
                keys: try IdempotencyKeyStore(directory: configuration.resolve("idempotency")),
                trust: configuration.ledgerTrust, logger: logger)
        } catch {
            throw DaemonError(.stateUnusable, "\(configuration.stateDirectory): \(error)")
        }
        let store: DaemonStore
        do throws(DaemonStoreError) {
            store = try DaemonStore(path: configuration.resolve(DaemonStore.fileName))
        } catch {
            throw DaemonError(error.code == .unavailable ? .stateUnusable : .stateSchema, error.description)
        }
        let identity = try await DeviceIdentity.prepare(configuration, ledger: client)
        let (session, control): (BlueZSession, DBusConnection)
        do {
            session = try await BlueZSession.connect(to: bus, adapter: configuration.adapter, logger: logger)
            control = try await DBusConnection.connect(to: bus, logger: logger)
        } catch {
            throw DaemonError(.bluetoothUnavailable, "the system bus: \(error)")
        }
        let adapter = try await waitForAdapter(configuration.adapter, session: session)
        return DaemonContext(
            configuration: configuration, logger: logger, identity: identity, store: store,
            ledger: client.with(identity.ledgerCredentials), adapter: adapter, control: control, clock: clock,
            metrics: metrics.map { DaemonMetrics(factory: $0, role: configuration.role) } ?? .none(configuration.role))
    }

    public static let systemClock: @Sendable () -> Timestamp = {
        Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
    }

    /// The ledger as a control call reaches it: answered, `ledger-offline` at worst, in 15 s, well within the
    /// caller's 25-s D-Bus timeout (with the ledger gone, a call once timed out as if the daemon were not running).
    var controlLedger: LedgerClient { ledger.answering(within: 15) }

    /// The trusted ledger keys, as the handshake, receipts, vouchers and deny lists are checked against them.
    var trustedLedgerKeys: TrustedLedgerKeys { TrustedLedgerKeys(configuration.ledgerPublicKeys) }

    /// The configured adapter, once bluetoothd shows it: checked at once, then at each change BlueZ announces.
    private static func waitForAdapter(_ name: String, session: BlueZSession) async throws(DaemonError) -> Adapter {
        let changes = session.events()  // subscribed before the first look, so nothing falls in between
        if let adapter = try? session.adapter(named: name) { return adapter }
        let found = await withTaskGroup(of: Adapter?.self) { group in
            group.addTask {
                for await _ in changes { if let adapter = try? session.adapter(named: name) { return adapter } }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: adapterTimeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let found else { throw DaemonError(.bluetoothUnavailable, "no adapter \(name) after 30 s") }
        return found
    }
}

// What a running daemon shows of itself in logs: its role, adapter and bus name, never its keys or credentials.
extension DaemonContext: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "\(configuration.role.rawValue) on \(configuration.adapter) as \(configuration.busName), \(identity)"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["identity": identity]) }
}
