import ArgumentParser
import BlepayControl
import BlepayProtocol
import DBusKit
import FoundationEssentials

struct Refund: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "refund",
        abstract: "Refund a settled payment in full or in part (business); prints the refund.",
        discussion: """
            The ledger moves the money back to the instrument that paid and signs a refund receipt; the customer's \
            daemon learns of it at its next contact with the ledger. Several refunds of one payment may together \
            return at most what it paid. Run again with the same --request-id after a lost answer: it refunds once.
            """)
    @Argument(help: "The payment id.") var paymentID: String
    @Argument(help: "The amount to refund, e.g. 10.00, in the payment's currency (default: all that is left).")
    var amount: String?
    @Option(help: "Why, kept with the refund and shown to the customer.") var reason = ""
    @Option(name: .customLong("request-id"), help: "Names this refund, so that a retry refunds once (default: a new one).")
    var requestID = UUID().uuidString
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        var minorUnits: UInt64 = 0
        if let amount {
            let payment = try await control.status(.business, paymentID)
            minorUnits = try parseMoney(amount, payment.details.currency ?? "").minorUnits
        }
        let reply = try await control.call(.business, "RefundPayment", [
            .string(paymentID), .uint64(minorUnits), .string(reason), .string(requestID),
        ])
        control.print(try ControlEntry(dbus: reply.arguments[0]))
    }
}

struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "report",
        abstract: "The merchant's takings on a day, by currency, from the ledger (business).")
    @Option(help: "The day, YYYY-MM-DD (default: today in the time zone).") var date: String?
    @Option(help: "The time zone the day is counted in, an IANA name (default: the system's).") var timeZone: String?
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        // The daemon fills in what is left empty: blepayctl links no time zone data.
        let reply = try await control.call(.business, "DailyReport", [.string(date ?? ""), .string(timeZone ?? "")])
        control.print(try ControlReport(dbus: reply.arguments))
    }
}
