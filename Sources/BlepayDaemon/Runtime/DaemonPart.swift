import BlepayConfiguration
import ServiceLifecycle

/// The concurrent parts of a running daemon, as its task group reports them ending.
enum DaemonPart: Sendable {
    case control, shutdown, links, watchdog

    /// Runs a daemon's parts together: its payment links (if they run apart from the service), its control API, the
    /// graceful shutdown (STOPPING=1, then the service's own shutdown) and the watchdog, until the control API ends.
    static func run(
        notify: SystemdNotify,
        links: (@Sendable () async -> Void)? = nil,
        control: @escaping @Sendable () async throws -> Void,
        shutdown: @escaping @Sendable () async -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: DaemonPart.self) { group in
            if let links {
                group.addTask {
                    await links()
                    return .links
                }
            }
            group.addTask {
                try await control()
                return .control
            }
            group.addTask {
                try? await gracefulShutdown()
                notify.stopping()
                await shutdown()
                return .shutdown
            }
            group.addTask {
                await notify.keepAlive()
                return .watchdog
            }
            try await untilControlEnds(&group)
        }
    }

    /// Waits until the control API has signalled the last event; then stops the rest. If it ends before a shutdown
    /// was asked for (the service's events ended by themselves), the daemon fails, so that systemd restarts it; a
    /// failure to serve the control API is thrown as it is.
    private static func untilControlEnds(_ group: inout ThrowingTaskGroup<DaemonPart, any Error>) async throws {
        var shuttingDown = false
        while let part = try await group.next() {
            switch part {
            case .shutdown: shuttingDown = true
            case .control:
                group.cancelAll()
                guard shuttingDown else {
                    throw DaemonError(.bluetoothUnavailable, "the payment service stopped by itself")
                }
                return
            case .links, .watchdog: break
            }
        }
    }
}
