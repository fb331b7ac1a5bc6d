import ArgumentParser
import BlepayControl
import DBusKit
import Foundation

struct Refund: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
    static let configuration = CommandConfiguration(
        abstract: "The merchant's takings on a day, by currency, from the ledger (business).")
    @Option(help: "The day, YYYY-MM-DD (default: today).") var date: String?
    @Option(help: "The time zone the day is counted in (default: this host's).") var timeZone = TimeZone.current.identifier
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        let day = date ?? Self.today(in: TimeZone(identifier: timeZone) ?? .current)
        let reply = try await control.call(.business, "DailyReport", [.string(day), .string(timeZone)])
        control.print(try ControlReport(dbus: reply.arguments))
    }

    static func today(in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day], from: Date())
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }
}
