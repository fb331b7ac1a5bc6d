import ArgumentParser
import BlepayControl
import BlepayDaemonConfiguration
import BlepayProtocol
import BlepayVersion
import DBusKit
import FoundationEssentials
import Glibc

/// `blepayctl`: a command for every method of the daemons' control API, and `watch` for their events.
/// Exit codes: 0 done; 1 refused by the daemon (the error's stable name is printed); 3 the daemon is not running
/// or cannot be reached; 4 the ledger cannot be reached; 5 (`show`) a receipt whose ledger signature does not
/// verify; 64 bad usage. Global options (`--json`, `--bus`, `--instance`) go before or after the subcommand.
@main
struct Blepayctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blepayctl",
        abstract: "Control blepay's customer and business daemons.",
        discussion: """
            Exit codes: 0 done, 1 refused by the daemon, 3 daemon not reachable, 4 ledger not reachable, 5 receipt \
            does not verify (show), 64 bad usage. With --json, an error is one JSON object on standard error.
            """,
        version: BlepayVersion.line,
        subcommands: [
            Request.self, Cancel.self, Start.self, Stop.self, Accept.self, Decline.self, Instruments.self, AddCard.self,
            Voucher.self, Settlement.self, Status.self, Payments.self, Show.self, Refund.self, Report.self, Watch.self,
            Interface.self,
        ])

    /// As ArgumentParser runs commands, but a refusal or an unreachable daemon is one line and its own exit code.
    static func main() async {
        let arguments = GlobalOptions.movedAfterSubcommand(Array(CommandLine.arguments.dropFirst()), root: Self.self)
        let json = arguments.contains("--json")
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as Failure {
            Failure.exit(code: failure.code, message: failure.description, status: failure.exitCode, json: json)
        } catch {
            let status = exitCode(for: error).rawValue
            // Help and usage as ArgumentParser prints them, unless the caller reads JSON.
            guard json, status != 0 else { exit(withError: error) }
            let code = switch status {
            case ExitCode.validationFailure.rawValue: "usage"
            case 5: "receipt-unverified"
            default: "failed"
            }
            let message = message(for: error)
            Failure.exit(code: code, message: message.isEmpty ? code : message, status: status, json: json)
        }
    }
}

struct Global: ParsableArguments {
    @Flag(help: "Print JSON (one object per line) instead of text.")
    var json = false

    @Option(help: "The bus the daemons are on: 'system', or a D-Bus address.")
    var bus = "system"

    @Option(help: "The daemon's instance, when several of a role share this host (its configuration's control.instance).")
    var instance: String?

    func connect() async throws -> Control {
        do {
            let connection = try await DBusConnection.connect(to: bus == "system" ? .system : .address(bus))
            return Control(connection: connection, json: json, instance: instance)
        } catch {
            throw Failure.unreachable("cannot reach the bus: \(error)")
        }
    }
}

/// Which daemon a command that both serve talks to.
struct RoleOption: ParsableArguments {
    @Flag(help: "The customer daemon.") var customer = false
    @Flag(help: "The business daemon.") var business = false

    func role(_ control: Control) async throws -> DaemonConfiguration.Role {
        if customer != business { return customer ? .customer : .business }
        return try await control.isRunning(.business) ? .business : .customer
    }
}

struct Request: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "request",
        abstract: "Send a payment request to every customer nearby (business); prints its payment id.")
    @Argument(help: "The amount, e.g. 25.50.") var amount: String
    @Argument(help: "The ISO 4217 currency, e.g. USD.") var currency: String
    @Option(help: "Your reference, shown to the customer (e.g. an order number).") var reference = ""
    @OptionGroup var global: Global

    func run() async throws {
        let money = try parseMoney(amount, currency)
        let control = try await global.connect()
        let reply = try await control.call(.business, "SendPaymentRequest",
            [.uint64(money.minorUnits), .string(money.currency.code), .string(reference)])
        let id = try reply.arguments[0].decode(String.self)
        control.print(["payment_id": id], text: id)
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Withdraw an open payment request (business).")
    @Argument(help: "The payment id.") var paymentID: String
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        _ = try await control.call(.business, "CancelPayment", [.string(paymentID)])
        control.print(["cancelled": paymentID], text: "cancelled \(paymentID)")
    }
}

struct Start: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "start", abstract: "Start receiving payment requests (customer).")
    @OptionGroup var global: Global
    func run() async throws {
        let control = try await global.connect()
        _ = try await control.call(.customer, "StartReceiving")
        control.print(["receiving": true], text: "receiving payment requests")
    }
}

struct Stop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop receiving payment requests (customer).")
    @OptionGroup var global: Global
    func run() async throws {
        let control = try await global.connect()
        _ = try await control.call(.customer, "StopReceiving")
        control.print(["receiving": false], text: "stopped receiving payment requests")
    }
}

struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "accept",
        abstract: "Accept a payment request shown by receivedPayment (customer).",
        discussion: "The amount and currency are the request's unless given; they must match it.")
    @Argument(help: "The payment id.") var paymentID: String
    @Option(help: "The instrument to pay with (see 'blepayctl instruments'); default: the first usable one.")
    var instrument: String?
    @Flag(help: "The instrument is delegated by your client, not managed by the ledger.") var delegated = false
    @Option(help: "A tip on top of the amount, e.g. 1.00.") var tip: String?
    @Option(help: "The amount you agree to, e.g. 25.50; default: the request's.") var amount: String?
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        let shown = try await control.status(.customer, paymentID)
        let currency = shown.details.currency ?? ""
        let requested = shown.details.amount ?? 0
        let total = try amount.map { try parseMoney($0, currency).minorUnits } ?? requested
        let tipUnits = try tip.map { try parseMoney($0, currency).minorUnits } ?? 0
        var instrumentID = instrument ?? ""
        if instrument == nil { instrumentID = try await control.firstInstrument() }
        _ = try await control.call(.customer, "AcceptPayment", [
            .string(paymentID), .uint64(total), .uint64(tipUnits), .string(currency), .string(instrumentID),
            .boolean(delegated),
        ])
        control.print(["accepted": paymentID, "instrument": instrumentID], text: "accepted \(paymentID) with \(instrumentID)")
    }
}

struct Decline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "decline", abstract: "Decline a payment request (customer).")
    @Argument(help: "The payment id.") var paymentID: String
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        _ = try await control.call(.customer, "CancelPayment", [.string(paymentID)])
        control.print(["declined": paymentID], text: "declined \(paymentID)")
    }
}

struct Instruments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "instruments", abstract: "List the customer's payment instruments.")
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        for instrument in try await control.instruments() { control.print(instrument) }
    }
}

struct AddCard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add-card",
        abstract: "Add a card to the customer's instruments; prints its instrument id.",
        discussion: """
            The card number and CVC are asked for on a terminal, and not shown as they are typed; otherwise they \
            are read from standard input, one per line. They never appear in the process list or the shell \
            history; the ledger keeps only a token, the brand, the last four digits and the expiry.
            """)
    @Option(help: "The expiry, MM/YYYY.") var expiry: String
    @OptionGroup var global: Global

    func run() async throws {
        let parts = expiry.split(separator: "/")
        guard parts.count == 2, let month = UInt16(parts[0]), let year = UInt16(parts[1]) else {
            throw ValidationError("--expiry is MM/YYYY, e.g. 12/2029")
        }
        guard let number = Prompt.secretLine("Card number: "), let cvc = Prompt.secretLine("CVC: ") else {
            throw ValidationError("give the card number and the CVC on standard input, one per line")
        }
        let control = try await global.connect()
        let reply = try await control.call(
            .customer, "AddCard", [.string(number.filter { $0 != " " }), .uint16(month), .uint16(year), .string(cvc)])
        let id = try reply.arguments[0].decode(String.self)
        control.print(["instrument_id": id], text: id)
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status",
        abstract: "Show where a payment stands; without one, each daemon on this host in a line.")
    @Argument(help: "The payment id.") var paymentID: String?
    @OptionGroup var role: RoleOption
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        guard let paymentID else {
            let roles: [DaemonConfiguration.Role] = role.customer != role.business
                ? [role.customer ? .customer : .business] : [.customer, .business]
            for role in roles { control.print(try await DaemonSummary.read(role, control)) }
            return
        }
        control.print(try await control.status(role.role(control), paymentID))
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "watch",
        abstract: "Print the daemons' payment events as they happen, until interrupted.")
    @OptionGroup var role: RoleOption
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        let roles: [DaemonConfiguration.Role] = role.customer != role.business
            ? [role.customer ? .customer : .business] : [.customer, .business]
        try await control.watch(roles)
    }
}

struct Interface: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "interface",
        abstract: "Print a daemon's D-Bus interface as introspection XML, with argument names (as installed).")
    @Argument(help: "customer or business.") var role: DaemonConfiguration.Role

    func run() { Swift.print(ControlAPI.introspectionXML(role), terminator: "") }
}

func parseMoney(_ amount: String, _ currency: String) throws -> Money {
    do {
        return try Money(decimal: amount, currency: Currency(currency.uppercased()))
    } catch {
        throw ValidationError(error.message)
    }
}
extension DaemonConfiguration.Role: ExpressibleByArgument {}
