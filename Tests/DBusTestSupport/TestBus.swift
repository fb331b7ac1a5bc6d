import DBusKit
import Foundation

/// A private `dbus-daemon` for one test: its own socket in a temporary directory, a permissive policy, and
/// nothing shared with the machine's buses. Stopped by `stop()` (or when released).
public final class TestBus: Sendable {
    public let address: String
    private let process: Process
    private let directory: URL

    public init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config.path)", "--nofork", "--nopidfile"]
        // Its only complaint as non-privileged-looking root ("Failed to set fd limit") is noise in test output.
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The daemon is ready once its socket exists.
        var waited = 0
        while !FileManager.default.fileExists(atPath: socket) {
            guard process.isRunning, waited < 500 else {
                process.terminate()
                throw TestBusError.didNotStart
            }
            usleep(10_000)
            waited += 1
        }
        self.process = process
        self.directory = directory
        self.address = "unix:path=\(socket)"
    }

    /// A new connection to this bus.
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(address))
    }

    public func stop() {
        // SIGKILL: the test runner may start children with SIGTERM blocked.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

public enum TestBusError: Error { case didNotStart }
