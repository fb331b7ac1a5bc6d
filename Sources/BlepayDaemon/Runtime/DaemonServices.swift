import BlepayConfiguration
import ServiceLifecycle

// A running daemon is a ServiceGroup of these, listed so that the group's reverse-order shutdown stops them in the
// right order: payments first (open ones end with their events while the links and the control API still run),
// then the control API (once every event has been signalled), then the links, then the watchdog. Another part (a
// settlement queue, a reachability monitor) is one more service in the list.

/// The payment link layer (BLE), or another part that serves until its turn in the shutdown.
struct LinkService: Service, CustomStringConvertible {
    var name = "LinkService"
    let serve: @Sendable () async throws -> Void
    var description: String { name }

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await serve() }
    }
}

/// The payments: until the daemon stops; then systemd hears STOPPING=1 and `shutdown` ends every open payment with
/// its event (what was only shown or offered is withdrawn, what the ledger executes is waited for).
struct PaymentService: Service, CustomStringConvertible {
    let notify: SystemdNotify
    let serve: @Sendable () async -> Void
    let shutdown: @Sendable () async -> Void
    var description: String { "PaymentService" }

    func run() async throws {
        let (serve, shutdown, notify) = (serve, shutdown, notify)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await serve() }
            group.addTask {
                guard (try? await gracefulShutdown()) != nil else { return }
                notify.stopping()
                await shutdown()
            }
            await group.next()
            group.cancelAll()
        }
    }
}

/// The control API: signals every event, and releases its bus name only at its turn in the shutdown.
struct ControlService: Service, CustomStringConvertible {
    let serve: @Sendable () async throws -> Void
    var description: String { "ControlService" }

    func run() async throws { try await serve() }
}

/// Something done every `interval` while the daemon runs (a probe of the ledger), first at once.
struct ProbeService: Service, CustomStringConvertible {
    let interval: Duration
    let probe: @Sendable () async -> Void
    var description: String { "ProbeService" }

    func run() async throws {
        let (interval, probe) = (interval, probe)
        await cancelWhenGracefulShutdown {
            repeat { await probe() } while (try? await Task.sleep(for: interval)) != nil
        }
    }
}
