import BlepayControl
import BlepayDaemonConfiguration
import DBusKit
import FoundationEssentials

/// `blepayctl status` without a payment: each daemon on this host in one line (or one JSON object): whether it
/// runs, whether it receives (customer), its open payments, whether the ledger answers it, what waits for
/// settlement, and the vouchers it holds (customer).
struct DaemonSummary: OutputLine {
    let daemon: String
    let bus_name: String
    let running: Bool
    var receiving: Bool?
    var open_payments: Int?
    var ledger_reachable: Bool?
    var settlement_waiting: UInt32?
    var vouchers: Int?

    static func read(_ role: DaemonConfiguration.Role, _ control: Control) async throws -> DaemonSummary {
        var summary = DaemonSummary(daemon: role.rawValue, bus_name: control.address(role).name, running: try await control.isRunning(role))
        guard summary.running else { return summary }
        let payments = try await control.call(role, "ListPayments").arguments[0].decode([DBusValue].self)
        summary.open_payments = try payments.map { try ControlPayment(dbus: $0) }.filter { $0.status == "open" }.count
        // A business that takes no offline payments refuses the settlement calls.
        if let settlement = try? await control.call(role, "SettlementStatus").arguments {
            summary.settlement_waiting = try settlement[0].decode(UInt32.self)
            summary.ledger_reachable = try settlement[3].decode(Bool.self)
        }
        if role == .customer {
            summary.receiving = try await control.receiving()
            summary.vouchers = try await control.call(role, "ListVouchers").arguments[0].decode([DBusValue].self).count
        }
        return summary
    }

    var text: String {
        guard running else { return "\(daemon) daemon (\(bus_name)): not running" }
        var parts: [String] = []
        if let receiving { parts.append(receiving ? "receiving" : "not receiving") }
        if let open_payments { parts.append("\(open_payments) open") }
        if let ledger_reachable { parts.append("ledger \(ledger_reachable ? "reachable" : "unreachable")") }
        if let settlement_waiting { parts.append("\(settlement_waiting) waiting for settlement") }
        if let vouchers { parts.append("\(vouchers) voucher\(vouchers == 1 ? "" : "s")") }
        return "\(daemon) daemon (\(bus_name)): " + parts.joined(separator: "; ")
    }
}

extension Control {
    /// The customer daemon's `Receiving` property.
    func receiving() async throws -> Bool {
        let (name, path, interface) = address(.customer)
        let reply = try await connection.call(
            destination: name, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(interface), .string("Receiving")])
        return try reply.arguments[0].unwrapped.decode(Bool.self)
    }
}
