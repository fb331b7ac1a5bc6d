import Foundation
import Testing

/// A real payment between two machines: the ledger and the customer daemon on host a, the business daemon on host
/// b, joined by the virtual air and a point-to-point IPv6 link only (`scripts/rig-payment.sh`); then a request
/// each side ends. Checked from what both daemons
/// signalled, what the ledger's books say, and how the daemons exited.
@Suite(.serialized, .timeLimit(.minutes(20)))
struct PaymentRigTests {
    struct Event: Decodable {
        let daemon: String
        let event: String
        let payment_id: String
        let details: [String: Detail]
    }

    enum Detail: Decodable, Equatable {
        case number(Int64)
        case text(String)
        case flag(Bool)

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let number = try? value.decode(Int64.self) {
                self = .number(number)
            } else if let flag = try? value.decode(Bool.self) {
                self = .flag(flag)
            } else {
                self = .text(try value.decode(String.self))
            }
        }
    }

    struct Instrument: Decodable {
        let id: String
        let available: [String: Int64]
    }

    struct Balance: Decodable {
        let currency: String
        let posted: Int64
    }

    struct Account: Decodable {
        let balances: [Balance]
    }

    @Test func aPaymentACancellationAndADeclineBetweenTwoHosts() throws {
        let script = Rig.packageRoot.appendingPathComponent("scripts/rig-payment.sh").path
        let command = "bash \(script) \(Rig.binaryDirectory)"
        let run = try Rig.run(topology: ["two-hosts"], commands: ["--host-a", command, "--host-b", command])
        #expect(run.status == 0, "rig exited \(run.status); it printed where it kept the logs")

        let ids = try (1...3).map { try run.text("pay\($0).id") }
        let customer = try run.lines("a.events.jsonl", as: Event.self)
        let business = try run.lines("b.events.jsonl", as: Event.self)
        func kinds(_ events: [Event], _ id: String) -> [String] { events.filter { $0.payment_id == id }.map(\.event) }

        // The payment: shown with what the business asked, accepted with a tip, finished on both sides.
        #expect(kinds(customer, ids[0]) == ["receivedPayment", "finishedPayment"])
        let shown = try #require(customer.first { $0.event == "receivedPayment" && $0.payment_id == ids[0] })
        #expect(shown.details["amount"] == .number(2550) && shown.details["currency"] == .text("USD"))
        #expect(shown.details["reference"] == .text("order-123") && shown.details["merchant_name"] == .text("Café Zürich"))
        let finished = try #require(customer.first { $0.event == "finishedPayment" })
        #expect(finished.details["tip"] == .number(100) && finished.details["amount"] == .number(2550))
        #expect(kinds(business, ids[0]).contains("finished"))
        #expect(!kinds(business, ids[0]).contains("failed"))

        // The business cancelled the second; the customer declined the third. Nothing was charged for them.
        #expect(kinds(customer, ids[1]) == ["receivedPayment", "cancelled"])
        #expect(customer.first { $0.payment_id == ids[1] && $0.event == "cancelled" }?.details["by"] == .text("business"))
        #expect(kinds(customer, ids[2]) == ["receivedPayment", "cancelled"])
        #expect(customer.first { $0.payment_id == ids[2] && $0.event == "cancelled" }?.details["by"] == .text("customer"))
        #expect(kinds(business, ids[1]).contains("cancelled"))
        #expect(kinds(business, ids[2]).contains("declined"))

        // The ledger moved exactly the amount plus the tip, once, and its books are sound.
        let before = try run.json("instruments.before.json", as: Instrument.self)
        let after = try run.json("instruments.after.json", as: Instrument.self)
        #expect(before.available["USD"] == 10_000 && after.available["USD"] == 10_000 - 2_650)
        let merchant = try run.json("merchant.after.json", as: Account.self)
        #expect(merchant.balances.first { $0.currency == "USD" }?.posted == 2_650)
        #expect(try run.text("audit.txt").contains("the books are sound"))

        // SIGTERM ended every process cleanly.
        for process in ["a.customer", "a.ledger", "b.business"] {
            #expect(try run.text("\(process).exit") == "0", "\(process)")
        }
    }
}

extension Rig.Result {
    func text(_ name: String) throws -> String {
        try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func json<T: Decodable>(_ name: String, as _: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: out.appendingPathComponent(name)))
    }

    func lines<T: Decodable>(_ name: String, as _: T.Type) throws -> [T] {
        try text(name).split(separator: "\n").map { try JSONDecoder().decode(T.self, from: Data($0.utf8)) }
    }
}
