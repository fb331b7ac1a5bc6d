import ArgumentParser
import BlepayControl
import BlepayProtocol
import DBusKit

extension ControlVoucher: OutputLine {}

/// `blepayctl voucher …`: the customer's pre-authorizations for payments made while both sides are offline.
struct Voucher: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "voucher",
        abstract: "Obtain, list and void the customer's pre-authorization vouchers.",
        subcommands: [Obtain.self, List.self, Cancel.self], defaultSubcommand: List.self)

    struct Obtain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "obtain",
            abstract: "Have the ledger set an amount aside on an instrument, to be spent offline until it expires.")
        @Argument(help: "The limit, e.g. 50.00.") var amount: String
        @Argument(help: "The currency, e.g. EUR.") var currency: String
        @Option(help: "The instrument to draw on (see 'blepayctl instruments'); default: the first usable one.")
        var instrument: String?
        @Option(help: "How long it can be spent, in hours (at most 720).") var hours: UInt32 = 24
        @OptionGroup var global: Global

        func validate() throws {
            guard (1...720).contains(hours) else { throw ValidationError("--hours is 1 to 720") }
        }

        func run() async throws {
            let limit = try parseMoney(amount, currency)
            let control = try await global.connect()
            let instrumentID = if let instrument { instrument } else { try await control.firstInstrument() }
            let reply = try await control.call(.customer, "ObtainVoucher", [
                .string(instrumentID), .uint64(limit.minorUnits), .string(limit.currency.code), .uint32(hours * 3600),
            ])
            control.print(try ControlVoucher(dbus: reply.arguments[0]))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the vouchers held, soonest to expire first.")
        @OptionGroup var global: Global

        func run() async throws {
            let control = try await global.connect()
            try await control.printEach(.customer, "ListVouchers", ControlVoucher.init(dbus:))
        }
    }

    /// `blepayctl voucher void`.
    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "void",
            abstract: "Stop a voucher's use at once, and have the ledger void it.",
            discussion: """
                The voucher is unusable on this device from then on, even if the ledger cannot be reached (then the \
                command fails; run it again to tell the ledger). docs/ledger.md says when the ledger returns what \
                is left of it.
                """)
        @Argument(help: "The voucher id.") var voucherID: String
        @OptionGroup var global: Global

        func run() async throws {
            let control = try await global.connect()
            _ = try await control.call(.customer, "VoidVoucher", [.string(voucherID)])
            control.print(["voided": voucherID], text: "voided \(voucherID)")
        }
    }
}
