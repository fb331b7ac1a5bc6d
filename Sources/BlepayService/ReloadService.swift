import BlepayConfiguration
import Glibc
import Logging
import ServiceLifecycle
import UnixSignals

/// SIGHUP as a reload (`systemctl reload`): the configuration file is read again and checked whole. What can change
/// while the process runs (`reloadable` keys, which `apply` sets) changes at once; every other key that changed is
/// named, at warning, as taking effect at the next restart; a file that cannot be used changes nothing and is
/// reported at error. The process never stops for it: SIGHUP's default action once ended a business with its
/// requests open, and systemd, seeing a clean signal, did not restart it.
public struct ReloadService: Service, CustomStringConvertible {
    public typealias Apply = @Sendable (_ file: String) throws(ConfigurationError) -> Void

    let file: String?
    let reloadable: Set<String>
    let notify: SystemdNotify
    let logger: Logger
    let apply: Apply
    public var description: String { "ReloadService" }

    /// `file`: the configuration file the process started with (nil: none, only defaults, nothing to reload).
    public init(file: String?, reloadable: Set<String>, notify: SystemdNotify, logger: Logger, apply: @escaping Apply) {
        self.file = file
        self.reloadable = reloadable
        self.notify = notify
        self.logger = logger
        self.apply = apply
    }

    /// Keeps SIGHUP from stopping the process before the reload service runs (while it starts, enrolls, waits
    /// for its adapter); the service's own handler takes over then.
    public static func ignoreUntilRunning() { signal(SIGHUP, SIG_IGN) }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        let service = self
        await cancelWhenGracefulShutdown {
            var running = service.file.flatMap { try? TableReader.load(file: $0).flattened } ?? [:]
            for await _ in signals { running = service.reload(running) }
        }
    }

    /// One reload; returns the keys as the process now runs with them.
    func reload(_ running: [String: String]) -> [String: String] {
        notify.reloading()
        defer { notify.reloaded() }
        guard let file else {
            logger.notice("started without a configuration file: nothing to reload")
            return running
        }
        let read: [String: String]
        do throws(ConfigurationError) {
            read = try TableReader.load(file: file).flattened
            try apply(file)
        } catch {
            logger.error("the configuration was not reloaded; nothing changed", metadata: ["error": "\(error)"])
            return running
        }
        let changed = Set(read.keys).union(running.keys).filter { read[$0] != running[$0] }.sorted()
        let applied = changed.filter(reloadable.contains)
        let pending = changed.filter { !reloadable.contains($0) }
        var changes: Logger.Metadata = ["file": "\(file)"]
        if !applied.isEmpty { changes["applied"] = "\(applied.joined(separator: ","))" }
        logger.notice("configuration reloaded", metadata: changes)
        if !pending.isEmpty {
            logger.warning("changed in the configuration, taking effect at the next restart: \(pending.joined(separator: ", "))")
        }
        var now = running
        for key in applied { now[key] = read[key] }
        return now
    }
}
