import BlepayControl
import BlepayDaemon
import DBusKit
import DBusTestSupport
import Foundation
import Testing
import TestSupport

/// `dbus/org.blepay.conf` on a bus with the system bus's default policy: root may own the daemons' names and call
/// them; an ordinary user may do neither; a member of the blepay group may call them. Each holds for the plain names
/// and for an instance's (`org.blepay.Customer.<instance>`).
@Suite struct PolicyTests {
    static let policy = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../dbus/org.blepay.conf").standardized.path

    /// Runs `dbus-send` on `bus` as uid and gid 65534 (nobody), in `groups`; returns its exit status and output.
    /// It waits on a thread of its own, never on one of the test runner's.
    static func dbusSend(_ bus: TestBus, groups: String? = nil, _ arguments: [String]) async throws -> (Int32, String) {
        try await onOwnThread { try runDBusSend(bus, groups: groups, arguments) }
    }

    private static func runDBusSend(_ bus: TestBus, groups: String?, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534"] + (groups.map { ["--groups=\($0)"] } ?? ["--clear-groups"])
            + ["dbus-send", "--bus=\(bus.address)", "--print-reply"] + arguments
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    static let instances: [String?] = [nil, "counter_2"]

    static func listPayments(_ instance: String?) -> [String] {
        [
            "--dest=\(ControlAPI.busName(.customer, instance: instance))", ControlAPI.customerPath.rawValue,
            "\(ControlAPI.customerInterface).ListPayments",
        ]
    }

    /// A customer object whose `ListPayments` answers, owned by root under the customer's (instance's) name.
    static func serve(on bus: TestBus, _ instance: String?) async throws -> DBusConnection {
        let daemon = try await bus.connect()
        _ = try await daemon.export(ControlAPI.customerPath, interfaces: [
            DBusInterface(ControlAPI.customerInterface, methods: [
                "ListPayments": DBusMethod(output: "a(ssa{sv})") { _ in [.array(element: "(ssa{sv})", [])] }
            ])
        ])
        try await daemon.requestName(ControlAPI.busName(.customer, instance: instance))
        return daemon
    }

    @Test(arguments: instances) func rootServesAndCallsTheDaemons(_ instance: String?) async throws {
        let bus = try TestBus(systemPolicyWith: [Self.policy])
        defer { bus.stop() }
        let daemon = try await Self.serve(on: bus, instance)
        defer { withExtendedLifetime(daemon) {} }
        let client = try await bus.connect()
        let reply = try await client.call(
            destination: ControlAPI.busName(.customer, instance: instance), path: ControlAPI.customerPath,
            interface: ControlAPI.customerInterface, member: "ListPayments")
        #expect(reply.arguments.count == 1)
    }

    @Test(arguments: instances) func anOrdinaryUserIsRefused(_ instance: String?) async throws {
        let bus = try TestBus(systemPolicyWith: [Self.policy])
        defer { bus.stop() }
        let daemon = try await Self.serve(on: bus, instance)
        defer { withExtendedLifetime(daemon) {} }
        let (status, output) = try await Self.dbusSend(bus, Self.listPayments(instance))
        #expect(status != 0 && output.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(output)")
        let (owned, ownOutput) = try await Self.dbusSend(bus, [
            "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.RequestName",
            "string:\(ControlAPI.busName(.business, instance: instance))", "uint32:0",
        ])
        #expect(owned != 0 && ownOutput.contains("AccessDenied"), "\(ownOutput)")
    }

    @Test(arguments: instances) func theBlepayGroupMayCall(_ instance: String?) async throws {
        try #require(getgrnam("blepay") != nil, "the blepay group is created by the install (systemd-sysusers)")
        let bus = try TestBus(systemPolicyWith: [Self.policy])
        defer { bus.stop() }
        let daemon = try await Self.serve(on: bus, instance)
        defer { withExtendedLifetime(daemon) {} }
        let (status, output) = try await Self.dbusSend(bus, groups: "blepay", Self.listPayments(instance))
        #expect(status == 0, "\(output)")
    }
}

/// Payment events tell amounts, merchants and references: the policy lets root and the blepay group receive them,
/// nobody else. A sentinel signal sent after each event, which everyone may receive, shows when the event would have
/// arrived (a bus delivers one sender's messages in order), so a missing event is not a matter of waiting longer.
@Suite struct SignalPolicyTests {
    /// `dbus-monitor` as nobody (in `groups`), for the blepay interfaces and the sentinel, writing to a file.
    final class Monitor {
        let process = Process()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-monitor-\(UUID().uuidString)")

        init(_ bus: TestBus, groups: String?) throws {
            FileManager.default.createFile(atPath: output.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534"]
                + (groups.map { ["--groups=\($0)"] } ?? ["--clear-groups"])
                + ["dbus-monitor", "--address", bus.address,
                   "type='signal',interface='\(ControlAPI.customerInterface)'",
                   "type='signal',interface='\(ControlAPI.businessInterface)'",
                   "type='signal',interface='\(SignalPolicyTests.sentinelInterface)'"]
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var text: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

        /// Ends the monitor, waiting for it on a thread of its own (never on one of the test runner's).
        func stop() async throws {
            // SIGKILL: the monitor may have inherited a signal mask that blocks SIGTERM.
            nonisolated(unsafe) let process = self.process
            kill(process.processIdentifier, SIGKILL)
            try await onOwnThread { process.waitUntilExit() }
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: output)
        }
    }

    static let sentinelInterface = "org.blepay.test.Sentinel"

    /// Emits `member` on the sentinel interface until the monitor shows it (at most 10 s).
    static func sentinel(_ member: String, from daemon: DBusConnection, to monitor: Monitor) async throws {
        for _ in 0..<100 where !monitor.text.contains("member=\(member)") {
            try daemon.emitSignal(path: ControlAPI.customerPath, interface: sentinelInterface, member: member)
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(monitor.text.contains("member=\(member)"), "the monitor never saw the sentinel")
    }

    /// Whether a monitor of nobody in `groups` receives the daemons' payment events.
    static func receivesEvents(groups: String?) async throws -> Bool {
        let bus = try TestBus(systemPolicyWith: [PolicyTests.policy])
        defer { bus.stop() }
        let daemon = try await bus.connect()
        let monitor = try Monitor(bus, groups: groups)
        try await sentinel("Ready", from: daemon, to: monitor)
        for (interface, path) in [(ControlAPI.customerInterface, ControlAPI.customerPath),
                                  (ControlAPI.businessInterface, ControlAPI.businessPath)] {
            try daemon.emitSignal(path: path, interface: interface, member: ControlAPI.eventSignal,
                arguments: [.string("receivedPayment"), .string(String(repeating: "ab", count: 16)),
                            .dictionary(key: "s", value: "v", [])])
        }
        try await sentinel("Done", from: daemon, to: monitor)
        try await monitor.stop()
        let events = monitor.text.components(separatedBy: "member=\(ControlAPI.eventSignal)").count - 1
        #expect(events == 0 || events == 2, "\(monitor.text)")
        return events == 2
    }

    @Test func anOrdinaryUserReceivesNoPaymentEvents() async throws {
        #expect(try await Self.receivesEvents(groups: nil) == false)
    }

    @Test func theBlepayGroupReceivesPaymentEvents() async throws {
        try #require(getgrnam("blepay") != nil, "the blepay group is created by the install (systemd-sysusers)")
        #expect(try await Self.receivesEvents(groups: "blepay") == true)
    }
}
