import BlepayControl
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayProtocol
import DBusKit
import Foundation
import GRDB
import Testing
import TestSupport

/// The payment history through the control API and `blepayctl`, on a private dbus-daemon: a payment made, both
/// daemons restarted over their state files, and the payment still listed and shown, its receipt verified.
@Suite(.timeLimit(.minutes(1)))
struct HistoryControlTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")

    /// Two state files, a payment of 25.50 USD with a 1.00 tip made between the daemons, and the daemons restarted.
    struct Restarted {
        let fixture: ControlFixture
        let paymentID: String
        let ledgerKey: Key32
        let paths: (customer: String, business: String)
    }

    func paidAndRestarted() async throws -> Restarted {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let paths = (customer: directory.appendingPathComponent("customer.sqlite").path,
            business: directory.appendingPathComponent("business.sqlite").path)
        let first = try await ControlFixture(history: paths)
        let customerEvents = try await first.events(.customer)
        let businessEvents = try await first.events(.business)
        _ = try await first.call(.customer, "StartReceiving")
        let sent = try await first.call(.business, "SendPaymentRequest", [.uint64(2550), .string("USD"), .string("order-123")])
        let id = try sent.arguments[0].decode(String.self)
        _ = try await customerEvents.next(.receivedPayment)
        _ = try await first.call(
            .customer, "AcceptPayment", [.string(id), .uint64(2550), .uint64(100), .string("USD"), .string("card-1"), .boolean(false)])
        _ = try await customerEvents.next(.finishedPayment)
        _ = try await businessEvents.next(.finished)
        let ledgerKey = first.ledger.ledgerKey.publicKey
        first.stop()
        return Restarted(fixture: try await ControlFixture(history: paths), paymentID: id, ledgerKey: ledgerKey, paths: paths)
    }

    @Test func aPaymentOutlivesARestartWithItsReceiptAndEvents() async throws {
        let restarted = try await paidAndRestarted()
        let fixture = restarted.fixture
        defer { fixture.stop() }
        let id = restarted.paymentID

        let page = try await fixture.call(.business, "ListHistory", [.stringDictionary([:])])
        let listed = try page.arguments[0].decode([DBusValue].self).map { try ControlPayment(dbus: $0) }
        #expect(listed.map(\.paymentID) == [id])
        #expect(listed.first?.status == "finished" && listed.first?.details.total == 2650)
        #expect(try page.arguments[1].decode(String.self) == "")

        for (role, kinds, counterpart) in [
            (DaemonConfiguration.Role.business, ["offered", "accepted", "finished"], nil),
            (.customer, ["receivedPayment", "finishedPayment"], "Café"),
        ] {
            let got = try await fixture.call(role, "GetPayment", [.string(id)]).arguments
            let payment = try ControlPayment(dbus: got[0])
            #expect(payment.status == "finished" && payment.details.reference == "order-123")
            let encoded = try #require(payment.details.receipt)
            let receipt = try Receipt(encoded: Array(try #require(Data(base64Encoded: encoded))))
            #expect(receipt.paymentID.description == id && receipt.status == .settled && receipt.tipMinorUnits == 100)
            let events = try got[1].decode([DBusValue].self).map { try ControlEntry(dbus: $0) }
            #expect(events.map(\.name) == kinds)
            #expect(events.allSatisfy { $0.label == "\(fixedNow.millisecondsSince1970)" })
            #expect(try got[2].decode([DBusValue].self).isEmpty)
            if let counterpart {
                #expect(payment.details.counterpart == counterpart)
            } else {
                #expect(payment.details.counterpart == TrustedLedgerKeys.keyID(of: receipt.payerKey).description)
            }
            let all = try await fixture.call(role, "ListPayments").arguments[0].decode([DBusValue].self)
            #expect(try all.map { try ControlPayment(dbus: $0).paymentID } == [id])
            let status = try ControlPayment(dbus: try await fixture.call(role, "PaymentStatus", [.string(id)]).arguments[0])
            #expect(status.status == "finished")
        }
    }

    @Test func pagesFollowTheCursorNewestFirst() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let paths = (customer: directory.appendingPathComponent("c.sqlite").path, business: directory.appendingPathComponent("b.sqlite").path)
        let history = try testHistory(paths.business, .business).history
        var ids: [String] = []
        for minute in UInt64(0)..<3 {
            let request = try PaymentRequest(
                paymentID: .random(), amount: Money(minorUnits: 100 + minute, currency: Currency("EUR")), reference: nil,
                merchantID: "m_cafe", merchantName: "Café", createdAt: fixedNow, expiresAt: fixedNow.adding(milliseconds: 120_000),
                businessOnline: true, signature: .unsigned)
            try history.record(HistoryChange(
                paymentID: request.paymentID, request: request, status: "cancelled", ended: true,
                event: HistoryEvent(kind: "cancelled", at: fixedNow.adding(milliseconds: minute * 60_000), details: "{}")))
            ids.insert(request.paymentID.description, at: 0)
        }
        let fixture = try await ControlFixture(history: paths)
        defer { fixture.stop() }
        var listed: [String] = []
        var filter: [String: DBusValue] = ["limit": .uint32(2), "status": .string("cancelled")]
        repeat {
            let page = try await fixture.call(.business, "ListHistory", [.stringDictionary(filter)]).arguments
            listed += try page[0].decode([DBusValue].self).map { try ControlPayment(dbus: $0).paymentID }
            filter["cursor"] = .string(try page[1].decode(String.self))
        } while filter["cursor"] != .string("")
        #expect(listed == ids)
        let limited = try await Self.blepayctl.run(["payments", "--business", "--limit", "1", "--bus", fixture.bus.address])
        #expect(limited.status == 0 && limited.output.hasPrefix(ids[0]) && limited.output.split(separator: "\n").count == 1)
    }

    @Test(arguments: [
        ["colour": DBusValue.string("red")], ["limit": .uint64(5)], ["limit": .uint32(0)], ["limit": .uint32(501)],
        ["since": .string("yesterday")], ["cursor": .string("not-a-cursor")],
    ])
    func badFiltersAreInvalidArguments(filter: [String: DBusValue]) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fixture = try await ControlFixture(history: (
            directory.appendingPathComponent("c.sqlite").path, directory.appendingPathComponent("b.sqlite").path))
        defer { fixture.stop() }
        let error = await #expect(throws: DBusError.self) {
            try await fixture.call(.business, "ListHistory", [.stringDictionary(filter)])
        }
        #expect(error?.name == "org.blepay.Error.InvalidArguments", "\(String(describing: error))")
    }

    @Test func blepayctlListsAndShowsAndVerifiesTheReceipt() async throws {
        let restarted = try await paidAndRestarted()
        let fixture = restarted.fixture
        defer { fixture.stop() }
        let id = restarted.paymentID
        let bus = ["--bus", fixture.bus.address]

        let listed = try await Self.blepayctl.run(["payments", "--business", "--json"] + bus)
        #expect(listed.status == 0, "\(listed.output)")
        let lines = listed.output.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(#""payment_id":"\#(id)""#), "\(listed.output)")
        // fixedNow is 2026-11-18.
        for (since, shown) in [("\(fixedNow.millisecondsSince1970 + 1)", false), ("2026-11-01", true), ("2026-11-19", false)] {
            let result = try await Self.blepayctl.run(["payments", "--business", "--since", since, "--status", "finished"] + bus)
            #expect(result.status == 0 && result.output.contains(id) == shown, "\(since): \(result.output)")
        }
        let bad = try await Self.blepayctl.run(["payments", "--business", "--since", "last week"] + bus)
        #expect(bad.status == 64, "\(bad.output)")

        let right = try config(restarted.ledgerKey)
        let shown = try await Self.blepayctl.run(["show", id, "--business", "--config", right] + bus)
        #expect(shown.status == 0, "\(shown.output)")
        #expect(shown.output.contains("  offered  ") && shown.output.contains("  finished  "), "\(shown.output)")
        let keyID = TrustedLedgerKeys.keyID(of: restarted.ledgerKey)
        #expect(shown.output.contains("receipt: verified (ledger key \(keyID))"), "\(shown.output)")

        let unreadable = try await Self.blepayctl.run(["show", id, "--customer", "--config", "/nonexistent/customer.toml"] + bus)
        #expect(unreadable.status == 0 && unreadable.output.contains("receipt: not verified ("), "\(unreadable.output)")

        // The ledger's signature, altered in the business's state file.
        try await DatabaseQueue(path: restarted.paths.business).write { db in
            let receipt = try #require(try Data.fetchOne(db, sql: "SELECT receipt FROM history_payments"))
            var bytes = Array(receipt)
            bytes[bytes.count - 1] ^= 0x01
            try db.execute(sql: "UPDATE history_payments SET receipt = ?", arguments: [Data(bytes)])
        }
        let tampered = try await Self.blepayctl.run(["show", id, "--business", "--config", right] + bus)
        #expect(tampered.status == 5, "\(tampered.output)")
        #expect(tampered.output.contains("receipt: does not verify"), "\(tampered.output)")
    }

    /// A business configuration file trusting `ledgerKey`.
    private func config(_ ledgerKey: Key32) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("business-\(UUID().uuidString).toml")
        try Data("[ledger]\npublic_key = \"\(ledgerKey.bytes.hex)\"\n".utf8).write(to: file)
        return file.path
    }
}
