import Foundation
import Glibc

/// A stand-in for systemd's `$NOTIFY_SOCKET`: a datagram socket in a temporary directory whose messages
/// (`READY=1\nSTATUS=…`) a test reads one line at a time, as systemd would take them.
public final class NotifyListener: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private var lines: [String] = []

    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The environment a daemon under systemd gets, with a watchdog of `watchdogMicroseconds` if given.
    public func environment(watchdogMicroseconds: UInt64? = nil) -> [String: String] {
        var environment = ["NOTIFY_SOCKET": path]
        if let watchdogMicroseconds { environment["WATCHDOG_USEC"] = "\(watchdogMicroseconds)" }
        return environment
    }

    /// Lines until one matches, for at most `timeout`; returns them all, the match last. Waits on a thread of its
    /// own, so that the daemon's tasks under test keep running.
    @discardableResult
    public func next(_ timeout: Duration = .seconds(10), where matches: @escaping @Sendable (String) -> Bool)
        async throws -> [String]
    {
        try await onOwnThread { try self.take(timeout, where: matches) }
    }

    /// Every line that comes within `window`.
    public func lines(within window: Duration) async throws -> [String] {
        try await onOwnThread { self.take(within: window) }
    }

    private func take(_ timeout: Duration, where matches: (String) -> Bool) throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        var seen: [String] = []
        while true {
            if lines.isEmpty { receive(until: deadline) }
            guard !lines.isEmpty else { throw TimedOut(what: "a notification; saw \(seen)") }
            let line = lines.removeFirst()
            seen.append(line)
            if matches(line) { return seen }
        }
    }

    private func take(within window: Duration) -> [String] {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline { receive(until: deadline) }
        defer { lines = [] }
        return lines
    }

    private func receive(until deadline: ContinuousClock.Instant) {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&poller, 1, max(milliseconds, 1)) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return }
        lines += String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
