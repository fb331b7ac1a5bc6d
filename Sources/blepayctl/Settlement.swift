import ArgumentParser
import BlepayControl
import BlepayProtocol
import DBusKit
import FoundationEssentials

extension ControlSettlement: OutputLine {}

/// `blepayctl settlement …`: the payments taken offline that wait for the ledger, on the business (what it accepted)
/// or the customer (its copies of what its businesses kept).
struct Settlement: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "settlement",
        abstract: "Show what was taken offline and the ledger has not settled yet.",
        subcommands: [Status.self, List.self], defaultSubcommand: Status.self)

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status",
            abstract: "How many payments wait for the ledger, their totals, and whether the ledger answers.",
            discussion: "With --now, send what waits to the ledger at once rather than at the next settlement interval.")
        @Flag(help: "Send what waits to the ledger now.") var now = false
        @OptionGroup var role: RoleOption
        @OptionGroup var global: Global

        struct Line: Encodable {
            let waiting: UInt32
            let totals: [String: UInt64]
            let oldest_queued_at: UInt64?
            let ledger_reachable: Bool
        }

        func run() async throws {
            let control = try await global.connect()
            let role = try await role.role(control)
            if now { _ = try await control.call(role, "SettleNow") }
            let a = try await control.call(role, "SettlementStatus").arguments
            let oldest = try a[2].decode(UInt64.self)
            let line = Line(
                waiting: try a[0].decode(UInt32.self), totals: try a[1].decode([String: UInt64].self),
                oldest_queued_at: oldest == 0 ? nil : oldest, ledger_reachable: try a[3].decode(Bool.self))
            let totals = line.totals.sorted { $0.key < $1.key }.map { code, units in
                (try? Currency(code)).flatMap { try? Money(minorUnits: units, currency: $0) }.map(\.description) ?? "\(units) \(code)"
            }
            let since = line.oldest_queued_at.map {
                ", oldest since " + Date(timeIntervalSince1970: Double($0) / 1000).formatted(.iso8601)
            } ?? ""
            control.print(line, text: "waiting \(line.waiting)\(totals.isEmpty ? "" : ": " + totals.joined(separator: ", "))\(since); "
                + "ledger \(line.ledger_reachable ? "reachable" : "unreachable")")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list",
            abstract: "Each payment that waits (oldest first), then the latest the ledger settled or refused.")
        @OptionGroup var role: RoleOption
        @OptionGroup var global: Global

        func run() async throws {
            let control = try await global.connect()
            try await control.printEach(try await role.role(control), "ListSettlements", ControlSettlement.init(dbus:))
        }
    }
}
