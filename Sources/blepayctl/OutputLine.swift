import BlepayDaemon
import BlepayProtocol
import DBusKit
import Foundation

/// Something `blepayctl` prints: as a line of text, or as a JSON object.
protocol OutputLine {
    var json: [String: Any] { get }
    var text: String { get }
}

/// A payment as `PaymentStatus` and `ListPayments` give it.
struct PaymentLine: OutputLine {
    let paymentID: String
    let status: String
    let details: [String: DBusValue]

    init(_ value: DBusValue) throws {
        guard case .structure(let fields) = value, fields.count == 3 else { throw Failure.refused("an unreadable payment") }
        paymentID = try fields[0].decode(String.self)
        status = try fields[1].decode(String.self)
        details = try fields[2].decode([String: DBusValue].self)
    }

    var json: [String: Any] { ["payment_id": paymentID, "status": status, "details": jsonDetails(details)] }
    var text: String { "\(paymentID)  \(status)  \(describe(details))" }
}

/// An instrument as `ListInstruments` gives it.
struct InstrumentLine: OutputLine {
    let id: String
    let kind: String
    let description: String
    let blocked: Bool
    let available: [String: Int64]

    init(_ value: DBusValue) throws {
        guard case .structure(let f) = value, f.count == 5 else { throw Failure.refused("an unreadable instrument") }
        (id, kind, description) = (try f[0].decode(String.self), try f[1].decode(String.self), try f[2].decode(String.self))
        blocked = try f[3].decode(Bool.self)
        available = try f[4].decode([String: Int64].self)
    }

    var json: [String: Any] {
        ["id": id, "type": kind, "description": description, "blocked": blocked, "available": available]
    }

    var text: String {
        let balances = available.sorted { $0.key < $1.key }.compactMap { code, units -> String? in
            guard let currency = try? Currency(code), units >= 0, let money = try? Money(minorUnits: UInt64(units), currency: currency)
            else { return nil }
            return money.description
        }
        return ([id, kind, description] + balances + (blocked ? ["(blocked)"] : [])).joined(separator: "  ")
    }
}

/// One `PaymentEvent`.
struct EventLine: OutputLine {
    let role: DaemonConfiguration.Role
    let kind: String
    let paymentID: String
    let details: [String: DBusValue]
    /// When `watch` received it.
    let time = Date()

    init(role: DaemonConfiguration.Role, _ message: DBusMessage) throws {
        self.role = role
        let a = message.arguments
        kind = try a[0].decode(String.self)
        paymentID = try a[1].decode(String.self)
        details = try a[2].decode([String: DBusValue].self)
    }

    var json: [String: Any] {
        [
            "daemon": role.rawValue, "event": kind, "payment_id": paymentID, "details": jsonDetails(details),
            "time": time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
        ]
    }
    var text: String { "\(role.rawValue)  \(kind)  \(paymentID.isEmpty ? "-" : paymentID)  \(describe(details))" }
}

/// Details as JSON values: numbers, strings and booleans.
func jsonDetails(_ details: [String: DBusValue]) -> [String: Any] {
    details.compactMapValues { value -> Any? in
        switch value.unwrapped {
        case .string(let s): s
        case .boolean(let b): b
        case .uint64(let n): n
        case .uint32(let n): n
        case .int64(let n): n
        default: nil
        }
    }
}

/// Details as people read them: the amount with its currency first, then the rest as key=value.
func describe(_ details: [String: DBusValue]) -> String {
    var parts: [String] = []
    let currency = details["currency"].flatMap { try? Currency($0.decode(String.self)) }
    func money(_ key: String) -> String? {
        guard let units = details[key].flatMap({ try? $0.decode(UInt64.self) }), let currency,
            let money = try? Money(minorUnits: units, currency: currency)
        else { return nil }
        return money.description
    }
    for key in ["amount", "total"] { if let text = money(key) { parts.append(text) } }
    if let tip = money("tip"), tip != (try? Money(minorUnits: 0, currency: currency!))?.description { parts.append("tip \(tip)") }
    let shown: Set = ["amount", "total", "tip", "currency"]
    for (key, value) in details.sorted(by: { $0.key < $1.key }) where !shown.contains(key) {
        if let text = jsonDetails([key: value])[key] { parts.append("\(key)=\(text)") }
    }
    return parts.joined(separator: "  ")
}
