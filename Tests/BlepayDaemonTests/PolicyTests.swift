import BlepayDaemon
import DBusKit
import DBusTestSupport
import Foundation
import TestSupport
import Testing

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
