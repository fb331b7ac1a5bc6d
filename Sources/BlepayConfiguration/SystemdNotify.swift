import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// systemd's readiness protocol (`sd_notify(3)`): one datagram of `KEY=value` lines to `$NOTIFY_SOCKET`. Without
/// that variable (not started by systemd with `Type=notify`) every call does nothing.
public struct SystemdNotify: Sendable {
    private let socketPath: String?
    /// Half the watchdog interval systemd asked for, if it asked.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let pidMatches = environment["WATCHDOG_PID"].map { $0 == "\(getpid())" } ?? true
        watchdogInterval = environment["WATCHDOG_USEC"].flatMap(UInt64.init).flatMap {
            pidMatches && $0 > 0 ? .microseconds($0 / 2) : nil
        }
    }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func stopping() { send("STOPPING=1") }
    public func watchdog() { send("WATCHDOG=1") }
    /// What `systemctl status` shows beside the unit: what the daemon does, or what keeps it from doing it.
    public func status(_ status: String) { send("STATUS=\(status)") }

    /// The reload that `reloading()` announced has ended.
    public func reloaded() { send("READY=1") }

    /// A reload began (`systemctl reload`); `ready(status:)` tells systemd it ended. systemd matches the two by the
    /// monotonic clock's time, which it asks for with RELOADING=1.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send("RELOADING=1\nMONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000)")
    }

    /// Tells systemd the daemon is alive every half watchdog interval, until cancelled; returns at once without
    /// a watchdog.
    public func keepAlive() async {
        guard let watchdogInterval else { return }
        repeat { watchdog() } while (try? await Task.sleep(for: watchdogInterval)) != nil
    }

    /// Sends `state`; failures are ignored, as `sd_notify` callers do: readiness is an optimisation of startup.
    func send(_ state: String) {
        guard let socketPath else { return }
        UnixDatagram.send(Array(state.utf8), to: socketPath)
    }
}
