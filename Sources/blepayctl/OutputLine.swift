import BlepayControl
import BlepayDaemonConfiguration
import BlepayProtocol
import DBusKit
import FoundationEssentials

/// Something `blepayctl` prints: as a line of text, or (`--json`) as one JSON object of the control API's contract.
protocol OutputLine: Encodable {
    var text: String { get }
}

extension ControlPayment: OutputLine {}
extension ControlEntry: OutputLine {}
extension ControlReport: OutputLine {}

/// An instrument as `ListInstruments` gives it.
struct InstrumentLine: OutputLine {
    let id: String
    let type: String
    let description: String
    let blocked: Bool
    /// What can be spent, in minor units of each currency.
    let available: [String: Int64]

    init(_ value: DBusValue) throws {
        guard case .structure(let f) = value, f.count == 5 else { throw Failure.refused("invalid-reply: an unreadable instrument") }
        (id, type, description) = (try f[0].decode(String.self), try f[1].decode(String.self), try f[2].decode(String.self))
        blocked = try f[3].decode(Bool.self)
        available = try f[4].decode([String: Int64].self)
    }

    var text: String {
        let balances = available.sorted { $0.key < $1.key }.compactMap { code, units -> String? in
            guard let currency = try? Currency(code), units >= 0, let money = try? Money(minorUnits: UInt64(units), currency: currency)
            else { return nil }
            return money.description
        }
        return ([id, type, description] + balances + (blocked ? ["(blocked)"] : [])).joined(separator: "  ")
    }
}

/// One `PaymentEvent` as `watch` prints it: the event (`event`, `payment_id`, `details`), the daemon that sent it,
/// when it arrived (`time`), and its line of text (`text`), so that no reader formats amounts itself.
struct WatchLine: OutputLine {
    let daemon: DaemonConfiguration.Role
    let event: ControlEvent
    let time = Date()

    var text: String { "\(daemon.rawValue)  \(event.text)" }

    private enum Keys: String, CodingKey { case daemon, time, text }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(daemon.rawValue, forKey: .daemon)
        try container.encode(time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), forKey: .time)
        try container.encode(event.text, forKey: .text)
    }
}
