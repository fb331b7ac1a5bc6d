/// The concurrent parts of a running daemon, as its task group reports them ending.
enum DaemonPart: Sendable {
    case control, shutdown, links, watchdog

    /// Waits until the control API has signalled the last event; then stops the rest. If it ends before a shutdown
    /// was asked for (the service's events ended by themselves), the daemon fails, so that systemd restarts it; a
    /// failure to serve the control API is thrown as it is.
    static func untilControlEnds(_ group: inout ThrowingTaskGroup<DaemonPart, any Error>) async throws {
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
