import BlepayConfiguration
import BlueZ
import BlueZTestSupport
import DBusKit
import DBusTestSupport
import LedgerTestSupport
import Testing
import TestSupport
@testable import BlepayDaemon

/// What systemd hears from a daemon whose bluetoothd dies: once, it still said "receiving payments on hci0" and kept
/// pinging the watchdog, so systemd never restarted it.
@Suite(.timeLimit(.minutes(1)))
struct HealthServiceTests {
    static let working = "scanning for customers on hci0"

    /// A stand-in bluetoothd with hci0 powered, and the health service of a daemon on it told of a watchdog every
    /// 50 ms; `body` runs while it does.
    static func watching(
        grace: Duration, _ body: (TestBus, FakeBluetoothd, NotifyListener) async throws -> Void
    ) async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let bluetoothd = try await FakeBluetoothd(bus: bus, adapters: ["hci0"], powered: true)
        let session = try await BlueZSession.connect(to: .address(bus.address), logger: testLogger)
        defer { session.close() }
        let systemd = try NotifyListener()
        let health = HealthService(
            notify: SystemdNotify(environment: systemd.environment(watchdogMicroseconds: 100_000)),
            adapter: try session.adapter(named: "hci0"), control: try await DBusConnection.connect(to: .address(bus.address)),
            working: working, grace: grace, logger: testLogger)
        let run = Task { try await health.run() }
        defer { run.cancel() }
        try await body(bus, bluetoothd, systemd)
    }

    @Test func theWatchdogIsWithheldWhileBluetoothdOrTheAdapterIsDownAndTheStatusSaysWhy() async throws {
        try await Self.watching(grace: .milliseconds(300)) { bus, bluetoothd, systemd in
            try await systemd.next { $0 == "WATCHDOG=1" }
            bluetoothd.stop()
            try await systemd.next { $0 == "STATUS=bluetoothd is not running: not \(Self.working)" }
            _ = try await systemd.lines(within: .milliseconds(200))  // a ping already on its way
            let withheld = try await systemd.lines(within: .milliseconds(500))
            #expect(!withheld.contains("WATCHDOG=1"))

            // A new bluetoothd brings the adapter back unpowered: still no watchdog, until it is powered.
            let restarted = try await FakeBluetoothd(bus: bus, adapters: ["hci0"], powered: false)
            try await systemd.next { $0 == "STATUS=adapter hci0 is powered off: not \(Self.working)" }
            let stillWithheld = try await systemd.lines(within: .milliseconds(500))
            #expect(!stillWithheld.contains("WATCHDOG=1"))
            try await restarted.power("hci0", true)
            try await systemd.next { $0 == "STATUS=\(Self.working)" }
            try await systemd.next { $0 == "WATCHDOG=1" }
        }
    }

    /// A daemon stopping while its watchdog's ping waits for the bus logged that the watchdog was withheld.
    @Test func aPingCutShortByShutdownIsNoNews() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let bluetoothd = try await FakeBluetoothd(bus: bus, adapters: ["hci0"], powered: true)
        defer { bluetoothd.stop() }
        let session = try await BlueZSession.connect(to: .address(bus.address), logger: testLogger)
        defer { session.close() }
        let log = LogRecorder()
        let health = HealthService(
            notify: SystemdNotify(environment: [:]), adapter: try session.adapter(named: "hci0"),
            control: try await DBusConnection.connect(to: .address(bus.address)), working: Self.working, grace: .seconds(1),
            logger: log.logger)
        #expect(await health.answers(.seconds(5)))
        bus.pause()
        let stopping = Task { await health.answers(.seconds(5)) }
        try await Task.sleep(for: .milliseconds(200))
        stopping.cancel()
        #expect(await stopping.value == false)
        bus.resume()
        #expect(log.lines.isEmpty)
    }

    /// A customer renewing its address power-cycles the adapter: no warning, no status, only a pause of the watchdog.
    @Test func aPowerCycleShorterThanTheGraceIsNoNews() async throws {
        try await Self.watching(grace: .seconds(2)) { _, bluetoothd, systemd in
            try await systemd.next { $0 == "WATCHDOG=1" }
            try await bluetoothd.power("hci0", false)
            try await bluetoothd.power("hci0", true)
            let after = try await systemd.lines(within: .seconds(3))
            #expect(!after.contains { $0.hasPrefix("STATUS=") }, "\(after)")
            #expect(after.last == "WATCHDOG=1")
        }
    }
}
