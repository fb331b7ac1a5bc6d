import BlepayControl
import BlepayDaemonConfiguration
import BlepayPayments
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Foundation
import Testing
import TestSupport
@testable import BlepayDaemon

/// The control API's one contract, `ControlEvent`: every event either daemon can emit goes out as a `PaymentEvent`
/// signal on a real bus and comes back, through `blepayctl watch --json` as operators, `make demo` and the rig read
/// it, as the same typed value; and the introspection XML installed for tools is the interface the daemons serve.
@Suite(.timeLimit(.minutes(1)))
struct ControlContractTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")

    static let peer = PeerID(7)
    static let request = try! PaymentRequest(
        paymentID: PaymentID(bytes: Array(repeating: 0xAB, count: 16)), amount: Money(minorUnits: 2550, currency: Currency("JPY")),
        reference: "order-1", merchantID: "m_cafe", merchantName: "Café Zürich", createdAt: fixedNow,
        expiresAt: fixedNow.adding(milliseconds: 120_000), businessOnline: true, signature: .unsigned)
    static var id: PaymentID { request.paymentID }
    static let receipt = try! Receipt(
        paymentID: request.paymentID, status: .settled, transactionID: "pay:1", amount: request.amount, tipMinorUnits: 100,
        issuedAt: fixedNow, merchantID: "m_cafe", payerKey: Key32(Array(repeating: 7, count: 32)),
        ledgerKeyID: FixedBytes(Array(repeating: 1, count: 8)), ledgerSignature: .unsigned)
    static let refusal = PaymentError(.insufficientFunds, "balance 3")

    /// One of every event each side emits.
    static let customerEvents: [CustomerEvent] = [
        .receivedPayment(peer, request), .finishedPayment(peer, receipt), .cancelled(peer, id, by: .customer),
        .cancelled(peer, id, by: .business), .error(peer, id, refusal), .error(peer, nil, PaymentError(.securityFailure)),
        .otherPaid(peer, id), .disconnected(peer), .outcomeFound(peer, id, .success(receipt)),
        .outcomeFound(peer, id, .failure(refusal)),
    ]
    static let businessEvents: [BusinessEvent] = [
        .offered(id, peer), .declined(id, by: peer), .customerRefused(id, by: peer, PaymentError(.clockSkew)),
        .accepted(id, by: peer, total: try! Money(minorUnits: 2650, currency: Currency("JPY"))),
        .acceptanceRefused(id, by: peer, refusal), .outcomePending(id), .finished(id, by: peer, receipt),
        .failed(id, by: peer, refusal), .cancelled(id), .expired(id), .settled(id, receipt),
        .settlementRefused(id, PaymentError(.preAuthorizationInvalid, "voucher_exceeded")),
    ]

    /// A refund, which no machine emits: the ledger's refunds bring it.
    static let refund: ControlEvent = {
        var details = ControlDetails()
        (details.refundID, details.amount, details.currency, details.refunded) = ("rf_1", 500, "JPY", 700)
        (details.reason, details.receipt, details.counterpart) = ("returned", "AQID", "Café Zürich")
        return ControlEvent(kind: .refunded, paymentID: id.description, details: details)
    }()

    @Test func everyKindIsCoveredOnce() {
        let kinds = Set(
            Self.customerEvents.map { ControlEvent($0).kind } + Self.businessEvents.map { ControlEvent($0).kind } + [Self.refund.kind])
        #expect(kinds == Set(ControlEvent.Kind.allCases))
    }

    /// The names `docs/control-api.md` gives `receipt_status`, on the events of either side: apps and the rig compare
    /// them as text.
    @Test func aReceiptsStatusIsNamedAsDocumented() throws {
        let documented = try String(contentsOf: ControlDocumentationTests.document, encoding: .utf8)
        for status in Receipt.Status.allCases {
            let receipt = try Receipt(
                paymentID: Self.id, status: status, transactionID: status == .settled ? "pay:1" : nil,
                amount: Self.request.amount, tipMinorUnits: 0, issuedAt: fixedNow, merchantID: "m_cafe",
                payerKey: Self.receipt.payerKey, ledgerKeyID: status == .settled ? Self.receipt.ledgerKeyID : nil,
                merchantSignature: status == .settled ? nil : .unsigned, ledgerSignature: status == .settled ? .unsigned : nil)
            let names = [ControlEvent(CustomerEvent.finishedPayment(Self.peer, receipt)).details.receiptStatus,
                ControlEvent(BusinessEvent.finished(Self.id, by: Self.peer, receipt)).details.receiptStatus]
            #expect(names == [status.name, status.name])
            #expect(documented.contains("`\(status.name)`"))
        }
        #expect(Receipt.Status.settled.name == "settled" && Receipt.Status.pendingSettlement.name == "pendingSettlement")
    }

    @Test func amountsKeepTheirCurrencysOwnDigits() {
        let shown = ControlEvent(CustomerEvent.receivedPayment(Self.peer, Self.request))
        #expect(shown.details.amount == 2550 && shown.details.currency == "JPY")
        #expect(shown.text.contains("2550 JPY") && !shown.text.contains("25.50"))
    }

    @Test func everyEventRoundTripsThroughTheBusAndBlepayctlWatch() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let daemon = try await bus.connect()
        var handles: [DaemonConfiguration.Role: DBusObjectHandle] = [:]
        for role in DaemonConfiguration.Role.allCases {
            let (name, path, _) = ControlAPI.address(role)
            handles[role] = try await daemon.export(path, interfaces: [ControlAPI.interface(role, handlers: [:])])
            try await daemon.requestName(name)
        }
        let expected = Self.customerEvents.map { (DaemonConfiguration.Role.customer, ControlEvent($0)) }
            + Self.businessEvents.map { (DaemonConfiguration.Role.business, ControlEvent($0)) } + [(.business, Self.refund)]

        let (watch, pipe) = try Self.blepayctl.start(["watch", "--json", "--bus", bus.address])
        defer { watch.terminate() }
        var lines = Lines(pipe).makeAsyncIterator()
        // A marker until blepayctl shows it heard one: from then on it hears everything, in order.
        let marker = ControlEvent(kind: .disconnected, paymentID: "", details: ControlDetails())
        let customer = try #require(handles[.customer])
        let emitter = Task {
            while !Task.isCancelled {
                try customer.emitSignal(
                    interface: ControlAPI.customerInterface, member: ControlAPI.eventSignal, arguments: marker.signalArguments)
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        _ = await lines.next()
        emitter.cancel()
        _ = await emitter.result
        for (role, event) in expected {
            try handles[role]!.emitSignal(
                interface: ControlAPI.address(role).interface, member: ControlAPI.eventSignal, arguments: event.signalArguments)
        }
        var received: [(String, ControlEvent, String)] = []
        while received.count < expected.count, let line = await lines.next() {
            let decoded = try JSONDecoder().decode(WatchedLine.self, from: Data(line.utf8))
            if decoded.event == marker { continue }
            received.append((decoded.daemon, decoded.event, decoded.text))
        }
        // Each daemon's events keep their order; watch follows the two daemons on two subscriptions.
        for role in DaemonConfiguration.Role.allCases {
            let mine = received.filter { $0.0 == role.rawValue }
            let sent = expected.filter { $0.0 == role }.map(\.1)
            #expect(mine.map(\.1) == sent)
            #expect(mine.map(\.2) == sent.map(\.text))
        }
    }

    @Test(arguments: DaemonConfiguration.Role.allCases)
    func theInstalledInterfaceIsTheOneServed(role: DaemonConfiguration.Role) async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let (name, path, interface) = ControlAPI.address(role)
        let served = try await fixture.client.call(
            destination: name, path: path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
            .arguments[0].decode(String.self)
        let printed = try await Self.blepayctl.run(["interface", role.rawValue])
        #expect(printed.status == 0)
        let installed = try #require(Self.element(interface, in: printed.output))
        #expect(Self.element(interface, in: served) == installed)
        #expect(installed.contains(#"<arg name="payment_id" type="s" direction="in"/>"#))
        #expect(installed.contains(#"<arg name="details" type="a{sv}"/>"#))
    }

    /// `blepayctl` is a client of the API, not a daemon: none of the daemons' stack (BlueZ, the transport, the
    /// state file, the ledger's HTTP client, swift-nio) is linked into it, so that it starts as a command-line
    /// tool should. Read off its symbol table, module by module (Swift's mangling names each one).
    @Test func blepayctlLinksNothingOfTheDaemonsStack() throws {
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = ["--defined-only", Self.blepayctl.path]
        let pipe = Pipe()
        nm.standardOutput = pipe
        try nm.run()
        let symbols = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        #expect(nm.terminationStatus == 0)
        let linked = { (module: String) in symbols.contains("$s\(module.utf8.count)\(module)") }
        #expect(linked("BlepayControl") && linked("DBusKit"))
        for module in ["BlepayDaemon", "BlepayBLE", "BlueZ", "BlepayDaemonStore", "BlepayLedgerClient", "GRDB", "NIOCore",
            "AsyncHTTPClient", "ServiceLifecycle"]
        {
            #expect(!linked(module), "blepayctl links \(module)")
        }
    }

    /// The `<interface name="…">` element of an introspection document.
    static func element(_ interface: String, in xml: String) -> String? {
        guard let start = xml.range(of: #"<interface name="\#(interface)">"#),
            let end = xml.range(of: "</interface>", range: start.upperBound..<xml.endIndex)
        else { return nil }
        return String(xml[start.lowerBound..<end.upperBound])
    }

    /// A line of `blepayctl watch --json`.
    struct WatchedLine: Decodable {
        let daemon: String
        let text: String
        let event: ControlEvent

        private enum Keys: String, CodingKey { case daemon, text }

        init(from decoder: any Decoder) throws {
            event = try ControlEvent(from: decoder)
            let container = try decoder.container(keyedBy: Keys.self)
            (daemon, text) = (try container.decode(String.self, forKey: .daemon), try container.decode(String.self, forKey: .text))
        }
    }
}

/// A process's output, line by line, as it comes.
struct Lines: AsyncSequence {
    let stream: AsyncStream<String>

    init(_ pipe: Pipe) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let buffer = LockedBuffer()
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                continuation.finish()
                return
            }
            for line in buffer.append(data) { continuation.yield(line) }
        }
        self.stream = stream
    }

    func makeAsyncIterator() -> AsyncStream<String>.Iterator { stream.makeAsyncIterator() }

    final class LockedBuffer: @unchecked Sendable {
        private var pending = Data()
        private let lock = NSLock()

        /// The complete lines so far.
        func append(_ data: Data) -> [String] {
            lock.lock()
            defer { lock.unlock() }
            pending.append(data)
            var lines: [String] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
            return lines
        }
    }
}
