import BlepayControl
import BlepayLedger
import BlueZTestSupport
import DBusKit
import DBusTestSupport
import Foundation
import Glibc
import LedgerTestSupport
import Testing
import TestSupport

/// `blepayd` as systemd runs it, on a private bus with a stand-in bluetoothd and a real ledger: what signals do to a
/// daemon with payments open.
@Suite(.timeLimit(.minutes(2)))
struct DaemonProcessTests {
    static let blepayd = BuiltProduct("blepayd", overriddenBy: "BLEPAYD")

    /// `systemctl reload` of a business with four requests open: once, SIGHUP stopped it at once, and systemd, seeing
    /// a clean signal, did not restart it.
    @Test func sighupReloadsABusinessAndKeepsItsOpenRequests() async throws {
        try await Self.withDaemon(metricsPort: try LoopbackHTTP.freePort()) { business in
            let open = try await business.openRequests(4)
            try business.configure("[logging]\nlevel = \"debug\"\n[payments]\nrequest_lifetime_seconds = 30\n")
            kill(business.process.processIdentifier, SIGHUP)
            try await business.systemd.next { $0 == "RELOADING=1" }
            try await business.systemd.next { $0 == "READY=1" }
            #expect(business.process.isRunning)
            for id in open {
                let status = try ControlPayment(dbus: try await business.call("PaymentStatus", [.string(id)]).arguments[0])
                #expect(status.status == "open", "\(id): \(status)")
            }

            // What it counted, as Prometheus scrapes it: one request withdrawn, the ledger answering.
            _ = try await business.call("CancelPayment", [.string(open[0])])
            // Both are counted by the daemon's own tasks, which the control calls above do not wait for: an event
            // as its history records it, the gauge as the daemon's ledger calls are answered (its deny list's first
            // fetch among them). Each was once missing when scraped right after the cancel, 0.7 s after the start.
            let counted = [#"blepay_payment_events_total{role="business",event="cancelled"} 1"#,
                #"blepay_ledger_reachable{role="business"} 1"#]
            var scraped = try await LoopbackHTTP.get(port: business.metricsPort, "/metrics")
            for _ in 0..<100 where !counted.allSatisfy(scraped.body.contains) {
                try await Task.sleep(for: .milliseconds(100))
                scraped = try await LoopbackHTTP.get(port: business.metricsPort, "/metrics")
            }
            #expect(scraped.status == 200)
            for line in counted { #expect(scraped.body.contains(line), "\(scraped.body)") }
            #expect(scraped.body.contains(#"blepay_settlement_waiting{role="business"} 0"#))
            #expect(try await LoopbackHTTP.get(port: business.metricsPort, "/other").status == 404)

            let output = try await business.stop()
            #expect(output.contains("notice blepay.business: configuration reloaded applied=logging.level"), "\(output)")
            #expect(output.contains(
                "warning blepay.business: changed in the configuration, taking effect at the next restart: payments.request_lifetime_seconds"))
        }
    }

    /// An idle daemon on libdispatch's executors woke at least once a second: the first job on its worker pool arms a
    /// workqueue monitor that fires every second for the life of the process. blepayd runs its tasks, timers and
    /// signals' handling without that pool: after requests, ledger calls, timers and a reload, none of its threads is
    /// one of the pool's workers (named after their queue, `com.apple.root.<qos>-qos`).
    @Test func aBusinessRunsItsTasksOnItsEventLoopsNotDispatchsWorkerPool() async throws {
        try await Self.withDaemon { business in
            let open = try await business.openRequests(2)
            _ = try await business.call("CancelPayment", [.string(open[0])])
            kill(business.process.processIdentifier, SIGHUP)
            try await business.systemd.next { $0 == "READY=1" }
            // Long enough for the daemon's short timers (its scan loop's, its D-Bus calls' timeouts) to have fired.
            try await Task.sleep(for: .seconds(2))
            let threads = try threadNames(of: business.process.processIdentifier)
            #expect(threads.contains { $0.hasPrefix("NIO-SGLTN") }, "\(threads)")
            #expect(!hasDispatchWorker(threads), "\(threads)")
            _ = try await business.stop()
        }
    }

    /// `systemctl stop` of a daemon that has just started: a stop cut its first calls to the ledger short, and in one
    /// run of fifteen of each, six customers and two businesses logged the ledger unreachable and its deny list not
    /// fetched. Under load, a customer stopped while it registered its advertisement again logged "advertising
    /// failed … was cancelled".
    @Test(arguments: ["business", "customer"])
    func aDaemonStoppedAsItStartsLogsNoWarning(role: String) async throws {
        for _ in 0..<15 {
            try await Self.withDaemon(role) { daemon in
                let output = try await daemon.stop()
                let warnings = output.split(separator: "\n").filter { $0.contains(" warning ") || $0.contains(" error ") }
                #expect(warnings.isEmpty, "\(warnings)")
            }
        }
    }

    /// A metrics port another process holds ends the daemon at once, saying why, before its READY=1: the port was
    /// bound beside the rest, so the daemon could tell systemd it had started and then exit. Each of the stops above
    /// once took a free port for its metrics, which another test's connection could take before the daemon bound it:
    /// the daemon exited, and the test waited a minute for a READY=1 that never came, saying only that it saw none.
    @Test func aMetricsPortAlreadyHeldEndsTheDaemonBeforeItIsReady() async throws {
        let held = try SilentListener()
        defer { held.close() }
        do {
            try await Self.withDaemon(metricsPort: held.port) { daemon in
                Issue.record("blepayd said READY=1 with its metrics port held by another process")
                _ = try await exitStatus(of: daemon.process, within: .seconds(30))
            }
        } catch let ended as Ended {
            #expect(ended.status == 1)
            #expect(ended.output.contains("blepayd: daemon.metrics-unavailable: cannot listen on 127.0.0.1:\(held.port): "),
                "\(ended.output)")
            #expect(ended.output.contains("Address already in use"), "\(ended.output)")
            #expect(!ended.output.contains("blepay.business: running"), "\(ended.output)")
        }
    }

    /// A daemon that ended on its own (`withDaemon` throws it if that came before READY=1): its exit status, and what
    /// it printed.
    struct Ended: Error, CustomStringConvertible {
        let status: Int32?
        let output: String
        var description: String { "blepayd ended (exit status \(status.map(String.init) ?? "none: killed at the limit")): \(output)" }
    }

    /// A daemon as systemd runs it (its READY=1 awaited), on a private bus with a stand-in bluetoothd and a real
    /// ledger; its metrics on a loopback port if given one; a business unless `withDaemon` was given "customer"
    /// (`call` and `openRequests` are the business's).
    struct Daemon {
        let process: Process
        let pipe: Pipe
        let systemd: NotifyListener
        let client: DBusConnection
        let metricsPort: Int
        let configure: (String) throws -> Void

        func call(_ member: String, _ arguments: [DBusValue]) async throws -> DBusMessage {
            let (name, path, interface) = ControlAPI.address(.business)
            return try await client.call(destination: name, path: path, interface: interface, member: member, arguments: arguments)
        }

        func openRequests(_ count: Int) async throws -> [String] {
            var open: [String] = []
            for amount in (1...count).map({ UInt64($0 * 250) }) {
                let reply = try await call("SendPaymentRequest", [.uint64(amount), .string("EUR"), .string("")])
                open.append(try reply.arguments[0].decode(String.self))
            }
            return open
        }

        /// SIGTERM; expects a clean exit and returns what the daemon printed.
        func stop() async throws -> String {
            process.terminate()
            let status = try await exitStatus(of: process, within: .seconds(30))
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(status == 0, "\(output)")
            return output
        }
    }

    static func withDaemon(_ role: String = "business", metricsPort: Int = 0, _ body: (Daemon) async throws -> Void)
        async throws
    {
        let bus = try TestBus()
        defer { bus.stop() }
        let bluetoothd = try await FakeBluetoothd(bus: bus, adapters: ["hci0"], powered: true)
        defer { bluetoothd.stop() }
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: role == "business" ? .merchant : .customer, name: "Café"))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepayd-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: directory + "/enrollment.token",
                contents: Data((account.enrollmentToken ?? "").utf8), attributes: [.posixPermissions: 0o600]))
            let file = directory + "/\(role).toml"
            let key = try await ledger.admin.ledgerKey().publicKey
            func configure(_ more: String) throws {
                let text = """
                    [bluetooth]
                    adapter = "hci0"
                    [ledger]
                    url = "\(ledger.baseURL)"
                    public_key = "\(key)"
                    [device]
                    state_directory = "\(directory)"
                    [metrics]
                    port = \(metricsPort)
                    \(more)
                    """
                try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            }
            try configure("")
            let systemd = try NotifyListener()
            let (process, pipe) = try Self.blepayd.start(
                [role, "--config", file, "--bus", bus.address], environment: systemd.environment())
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? await systemd.next(.seconds(1)) { $0 == "READY=1" }) == nil {
                guard process.isRunning, ContinuousClock.now < deadline else {
                    let status = process.isRunning ? nil : process.terminationStatus
                    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                    throw Ended(status: status, output: String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
                }
            }
            let client = try await DBusConnection.connect(to: .address(bus.address))
            try await body(Daemon(
                process: process, pipe: pipe, systemd: systemd, client: client, metricsPort: metricsPort, configure: configure))
        }
    }
}
