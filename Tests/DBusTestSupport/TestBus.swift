import DBusKit
import Foundation

/// A private `dbus-daemon` for one test: its own socket in a temporary directory, a permissive policy (or the
/// system bus's, with policy files included), and nothing shared with the machine's buses. Stopped by `stop()`
/// (or when released).
public final class TestBus: Sendable {
    public let address: String
    private let process: Process
    private let directory: URL

    /// A bus that allows everything.
    public convenience init() throws {
        try self.init(policy: """
              <type>session</type>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            """)
    }

    /// A bus with the system bus's default policy (Debian's `system.conf`: anyone may connect, nobody may own a
    /// name or call a method unless a policy file punches a hole) and `policyFiles` included, as installed.
    public convenience init(systemPolicyWith policyFiles: [String]) throws {
        try self.init(policy: """
              <type>system</type>
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
              </policy>
            """ + policyFiles.map { "<include>\($0)</include>\n" }.joined())
    }

    private init(policy: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
            \(policy)
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)

        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        // The daemon prints its address once it accepts connections: that line is the readiness signal.
        process.arguments = ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address=1"]
        process.standardOutput = output
        // Its only complaint as root in a container ("Failed to set fd limit") is noise in test output.
        process.standardError = FileHandle.nullDevice
        try process.run()
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData  // blocks until data or EOF
            guard !chunk.isEmpty else { throw TestBusError.didNotStart }
            printed.append(chunk)
        }
        guard let line = String(data: printed, encoding: .utf8)?.split(separator: "\n").first, line.contains(socket) else {
            process.terminate()
            throw TestBusError.didNotStart
        }
        self.process = process
        self.directory = directory
        self.address = String(line)
    }

    /// A new connection to this bus.
    public func connect() async throws -> DBusConnection {
        try await DBusConnection.connect(to: .address(address))
    }

    /// Stops the bus from answering anything until `resume()` (SIGSTOP): a call on it waits.
    public func pause() { kill(process.processIdentifier, SIGSTOP) }

    public func resume() { kill(process.processIdentifier, SIGCONT) }

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
