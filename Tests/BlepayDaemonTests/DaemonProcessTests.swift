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
        let bus = try TestBus()
        defer { bus.stop() }
        let bluetoothd = try await FakeBluetoothd(bus: bus, adapters: ["hci0"], powered: true)
        defer { bluetoothd.stop() }
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .merchant, name: "Café"))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepayd-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: directory + "/enrollment.token",
                contents: Data((account.enrollmentToken ?? "").utf8), attributes: [.posixPermissions: 0o600]))
            let file = directory + "/business.toml"
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
                    \(more)
                    """
                try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            }
            let metricsPort = try LoopbackHTTP.freePort()
            try configure("[metrics]\nport = \(metricsPort)")
            let systemd = try NotifyListener()
            let (process, pipe) = try Self.blepayd.start(
                ["business", "--config", file, "--bus", bus.address], environment: systemd.environment())
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            try await systemd.next(.seconds(60)) { $0 == "READY=1" }

            let client = try await DBusConnection.connect(to: .address(bus.address))
            let (name, path, interface) = ControlAPI.address(.business)
            func call(_ member: String, _ arguments: [DBusValue]) async throws -> DBusMessage {
                try await client.call(destination: name, path: path, interface: interface, member: member, arguments: arguments)
            }
            var open: [String] = []
            for amount in [250, 500, 750, 1_000] as [UInt64] {
                let reply = try await call("SendPaymentRequest", [.uint64(amount), .string("EUR"), .string("")])
                open.append(try reply.arguments[0].decode(String.self))
            }

            try configure("[metrics]\nport = \(metricsPort)\n[logging]\nlevel = \"debug\"\n[payments]\nrequest_lifetime_seconds = 30\n")
            kill(process.processIdentifier, SIGHUP)
            try await systemd.next { $0 == "RELOADING=1" }
            try await systemd.next { $0 == "READY=1" }
            #expect(process.isRunning)
            for id in open {
                let status = try ControlPayment(dbus: try await call("PaymentStatus", [.string(id)]).arguments[0])
                #expect(status.status == "open", "\(id): \(status)")
            }

            // What it counted, as Prometheus scrapes it: one request withdrawn, the ledger answering.
            _ = try await call("CancelPayment", [.string(open[0])])
            let scraped = try await LoopbackHTTP.get(port: metricsPort, "/metrics")
            #expect(scraped.status == 200)
            #expect(scraped.body.contains(#"blepay_payment_events_total{role="business",event="cancelled"} 1"#), "\(scraped.body)")
            #expect(scraped.body.contains(#"blepay_ledger_reachable{role="business"} 1"#))
            #expect(scraped.body.contains(#"blepay_settlement_waiting{role="business"} 0"#))
            #expect(try await LoopbackHTTP.get(port: metricsPort, "/other").status == 404)

            process.terminate()
            let status = try await exitStatus(of: process, within: .seconds(30))
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(status == 0, "\(output)")
            #expect(output.contains("notice blepay.business: configuration reloaded applied=logging.level"), "\(output)")
            #expect(output.contains(
                "warning blepay.business: changed in the configuration, taking effect at the next restart: payments.request_lifetime_seconds"))
        }
    }
}
