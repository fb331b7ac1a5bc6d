import BlepayConfiguration
import BlueZ
import DBusKit
import Logging
import ServiceLifecycle
import Synchronization

/// What systemd hears about a running daemon: STATUS= kept current (what it does, or what keeps it from doing it),
/// and WATCHDOG=1 only while it is healthy: bluetoothd runs, the adapter is there and powered, and both bus
/// connections answer a ping (their event loops turn). A daemon stuck, or cut off from Bluetooth for longer than
/// the unit's `WatchdogSec`, is restarted by systemd; a short bluetoothd restart or power cycle is ridden out.
struct HealthService: Service, CustomStringConvertible {
    /// Why the daemon cannot do its work.
    enum Problem: Equatable, Sendable {
        case bluetoothdGone
        case adapterMissing(String)
        case adapterOff(String)

        var status: String {
            switch self {
            case .bluetoothdGone: "bluetoothd is not running"
            case .adapterMissing(let name): "adapter \(name) is gone"
            case .adapterOff(let name): "adapter \(name) is powered off"
            }
        }
    }

    let notify: SystemdNotify
    let adapter: Adapter
    let control: DBusConnection
    /// What the daemon does while healthy, e.g. "scanning for customers on hci0".
    let working: String
    /// How long a problem lasts before it is reported: a deliberate power cycle (a customer renewing its address)
    /// is no news. The watchdog is withheld at once.
    var grace: Duration = .seconds(5)
    let logger: Logger
    var description: String { "HealthService" }

    func run() async throws {
        let state = State()
        // Subscribed before the first look, so nothing falls in between; only what can change the diagnosis.
        let adapterPath = adapter.path
        let events = adapter.session.changes { event -> Sign? in
            switch event {
            case .vanished: .bluetoothd(running: false)
            case .restarted: .bluetoothd(running: true)
            case .added(adapterPath, _), .removed(adapterPath, _), .changed(adapterPath, _, _): .adapterChanged
            default: nil
            }
        }
        let (notify, logger, working, grace, name) = (notify, logger, working, grace, adapter.name)
        let assess = { @Sendable (bluetoothd: Bool) in
            let now = bluetoothd ? diagnose() : .bluetoothdGone
            let recovered = state.value.withLock { state in
                state.problem = now
                defer { if now == nil { state.reported = nil } }
                return now == nil && state.reported != nil
            }
            if recovered {
                logger.notice("working again", metadata: ["adapter": "\(name)"])
                notify.status(working)
            }
            guard let now else { return }
            Task {
                try await Task.sleep(for: grace)
                let report = state.value.withLock { state in
                    guard state.problem == now, state.reported != now else { return false }
                    state.reported = now
                    return true
                }
                guard report else { return }
                logger.warning("not working: \(now.status)", metadata: ["adapter": "\(name)"])
                notify.status("\(now.status): not \(working)")
            }
        }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    var bluetoothd = true
                    assess(bluetoothd)
                    for await sign in events {
                        if case .bluetoothd(let running) = sign { bluetoothd = running }
                        assess(bluetoothd)
                    }
                }
                group.addTask {
                    guard let interval = notify.watchdogInterval else { return }
                    repeat {
                        if state.value.withLock({ $0.problem }) == nil, await answers(interval) { notify.watchdog() }
                    } while (try? await Task.sleep(for: interval)) != nil
                }
                await group.waitForAll()
            }
        }
    }

    /// What a bluetoothd event tells the diagnosis: bluetoothd came or went, or the adapter's object changed.
    private enum Sign: Sendable {
        case bluetoothd(running: Bool)
        case adapterChanged
    }

    /// The problem the daemon has now, and the one its status reports.
    private final class State: Sendable {
        let value = Mutex<(problem: Problem?, reported: Problem?)>((nil, nil))
    }

    private func diagnose() -> Problem? {
        guard adapter.isPresent else {
            return .adapterMissing(adapter.name)
        }
        return adapter.isPowered ? nil : .adapterOff(adapter.name)
    }

    /// Whether both connections' event loops carry a call to the bus and back within `limit`.
    func answers(_ limit: Duration) async -> Bool {
        for connection in [control, adapter.session.connection] {
            do {
                try await connection.ping(timeout: limit)
            } catch where error.code == .cancelled {
                return false
            } catch {
                logger.warning("the watchdog is withheld: a bus connection does not answer", metadata: ["error": "\(error)"])
                return false
            }
        }
        return true
    }
}
