import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import BlepayDaemon

/// `blepayctl` as people and scripts use it, against the control API on a private bus: global options anywhere,
/// errors as JSON under `--json`, the ledger's absence as its own exit code within the call's time, card refusals
/// with their codes, and a card number that never shows on a terminal.
@Suite(.timeLimit(.minutes(1)))
struct BlepayctlTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")
    static let card = CustomerControl.Instrument(
        id: "ins_1", kind: "card", description: "visa ending 4242", blocked: false, available: ["EUR": 5_000])

    @Test func globalOptionsAreTakenBeforeTheSubcommandToo() async throws {
        let fixture = try await ControlFixture(wallet: .init(list: { [Self.card] }, addCard: { _, _, _, _ in "" }))
        defer { fixture.stop() }
        let before = try await Self.blepayctl.run(["--bus", fixture.bus.address, "--json", "instruments"])
        let after = try await Self.blepayctl.run(["instruments", "--json", "--bus=\(fixture.bus.address)"])
        #expect(before.status == 0 && before.output.contains("\"id\":\"ins_1\""), "\(before.output)")
        #expect(before.output == after.output)
        // Between the words of a nested subcommand as well.
        let nested = try await Self.blepayctl.run(["--bus", fixture.bus.address, "voucher", "--json", "list"])
        #expect(nested.status == 0, "\(nested.output)")
    }

    /// A ledger that takes the connection and never answers: once, `instruments` hung 25 s and came back as
    /// `dbus.timeout` with exit 3, "the daemon is not running".
    @Test func aLedgerThatDoesNotAnswerIsLedgerOfflineWithExitCode4BeforeTheCallTimesOut() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let ledger = LedgerClient(baseURL: "http://127.0.0.1:\(silent.port)", credentials: .none, logger: testLogger)
            .answering(within: 2)
        let wallet = CustomerControl.Wallet(
            list: { () throws(PaymentError) in
                do throws(LedgerClientError) { _ = try await ledger.instruments() } catch { throw error.paymentError }
                return []
            }, addCard: { _, _, _, _ in "" })
        let fixture = try await ControlFixture(wallet: wallet)
        defer { fixture.stop() }
        let started = ContinuousClock.now
        let text = try await Self.blepayctl.run(["instruments", "--bus", fixture.bus.address])
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(text.status == 4 && text.output.hasPrefix("blepayctl: ledger-offline: "), "\(text.output)")
        let json = try await Self.blepayctl.run(["--json", "instruments", "--bus", fixture.bus.address])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: [String: Any]]
        #expect(json.status == 4 && object?["error"]?["code"] as? String == "ledger-offline", "\(json.output)")
        #expect(object?["error"]?["exit"] as? Int == 4)
    }

    /// A bad card number once came back as `ledger-error` ("retry").
    @Test func aCardTheLedgerRefusesKeepsItsFieldCodes() async throws {
        let refusal = LedgerClientError.refused(status: 400, ErrorBody.Detail(
            code: "validation.failed", message: "the card number's check digit is wrong",
            fields: [.init(path: "card.number", code: "invalid-checksum", message: "the card number's check digit is wrong")],
            paymentError: nil))
        let fixture = try await ControlFixture(wallet: .init(list: { [] }, addCard: { (_, _, _, _) throws(PaymentError) in
            throw refusal.paymentError
        }))
        defer { fixture.stop() }
        let result = try await Self.blepayctl.run(
            ["add-card", "--expiry", "12/2030", "--bus", fixture.bus.address], input: "4242424242424241\n123\n")
        #expect(result.status == 1)
        #expect(result.output == "blepayctl: invalid-instrument: card.number invalid-checksum: the card number's check digit is wrong\n")
        let json = try await Self.blepayctl.run(
            ["add-card", "--json", "--expiry", "12/2030", "--bus", fixture.bus.address], input: "4242424242424241\n123\n")
        #expect(json.output.hasPrefix("{\"error\":{\"code\":\"invalid-instrument\",\"exit\":1,"), "\(json.output)")
    }

    /// On a terminal, `add-card` asks for the number and the CVC, and neither shows as it is typed.
    @Test func addCardOnATerminalPromptsAndDoesNotEcho() async throws {
        let given = Mutex<[String]>([])
        let fixture = try await ControlFixture(wallet: .init(list: { [] }, addCard: { number, _, _, cvc in
            given.withLock { $0 = [number, cvc] }
            return "ins_9"
        }))
        defer { fixture.stop() }
        let terminal = try Terminal()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.blepayctl.path)
        process.arguments = ["add-card", "--expiry", "12/2030", "--bus", fixture.bus.address]
        (process.standardInput, process.standardOutput, process.standardError) = (terminal.child, terminal.child, terminal.child)
        try process.run()
        defer { process.terminate() }
        var shown = try await terminal.read(until: "Card number: ")
        terminal.type("4242424242424242\n")
        shown += try await terminal.read(until: "CVC: ")
        terminal.type("321\n")
        shown += try await terminal.read(until: "ins_9")
        #expect(!shown.contains("4242") && !shown.contains("321"), "\(shown)")
        #expect(given.withLock { $0 } == ["4242424242424242", "321"])
    }

    /// `blepayctl status` alone: each daemon in one line, as an operator looks at a host.
    @Test func statusWithoutAPaymentSummarizesEachDaemon() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        _ = try await fixture.call(.customer, "StartReceiving")
        _ = try await fixture.call(.business, "SendPaymentRequest", [.uint64(990), .string("EUR"), .string("")])
        let text = try await Self.blepayctl.run(["status", "--bus", fixture.bus.address])
        #expect(text.status == 0)
        let lines = text.output.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("customer daemon (org.blepay.Customer): receiving; "), "\(text.output)")
        #expect(lines.last?.hasPrefix("business daemon (org.blepay.Business): 1 open") == true, "\(text.output)")
        let json = try await Self.blepayctl.run(["status", "--business", "--json", "--bus", fixture.bus.address])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["daemon"] as? String == "business" && object?["running"] as? Bool == true)
        #expect(object?["open_payments"] as? Int == 1, "\(json.output)")
        let elsewhere = try await Self.blepayctl.run(["status", "--customer", "--instance", "spare", "--bus", fixture.bus.address])
        #expect(elsewhere.output == "customer daemon (org.blepay.Customer.spare): not running\n")
    }
}

/// A pseudo-terminal: the child's side for a process, the other read and typed on as a person would.
final class Terminal: Sendable {
    let parent: Int32
    let child: FileHandle

    init() throws {
        var (parent, child): (Int32, Int32) = (0, 0)
        guard openpty(&parent, &child, nil, nil, nil) == 0 else { throw POSIXError(.ENOTTY) }
        self.parent = parent
        self.child = FileHandle(fileDescriptor: child, closeOnDealloc: true)
    }

    deinit { Glibc.close(parent) }

    func type(_ text: String) { _ = text.withCString { write(parent, $0, strlen($0)) } }

    /// What the terminal shows until `text` (included), for at most 10 s.
    func read(until text: String) async throws -> String {
        let parent = parent
        return try await onOwnThread {
            var shown = ""
            let deadline = Date().addingTimeInterval(10)
            while !shown.contains(text) {
                guard Date() < deadline else { throw TimedOut(what: "\(text) on the terminal; shown: \(shown)") }
                var poller = pollfd(fd: parent, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 512)
                let count = Glibc.read(parent, &buffer, buffer.count)
                guard count > 0 else { throw TimedOut(what: "\(text) before the terminal closed; shown: \(shown)") }
                shown += String(decoding: buffer[..<count], as: UTF8.self)
            }
            return shown
        }
    }
}
