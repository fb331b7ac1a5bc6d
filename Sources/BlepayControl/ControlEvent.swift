import DBusKit

/// One `PaymentEvent(s kind, s payment_id, a{sv} details)` signal, typed: what the daemons emit, what `blepayctl
/// watch` prints (`--json`: this value, with `daemon`, `time` and `text`), and what tests and scripts read back.
/// The customer's kinds are the reference SDK's.
public struct ControlEvent: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        // The customer's, per payment `receivedPayment` then one of the four after it; `disconnected` per connection.
        case receivedPayment, finishedPayment, error, otherPaid, disconnected
        /// The customer's, outside that sequence: the outcome of a payment that ended `error` `outcome-unknown`,
        /// learned over a later connection (details as `finishedPayment`'s, or `error`'s).
        case outcomeFound
        /// Either side's: the customer's (details `by`) or the business's own withdrawal.
        case cancelled
        // The business's.
        case offered, declined, customerRefused, accepted, acceptanceRefused, outcomePending, finished, failed, expired
        /// Either side's, for a payment finished offline (`receipt_status` pendingSettlement) that it keeps: the
        /// ledger's verdict. Outside the customer's SDK sequence, as `outcomeFound`.
        case settled, settlementRefused
        /// Either side's: part or all of a finished payment was given back (details `refund_id`, `amount`,
        /// `currency`, `refunded`, `reason`, `receipt`). Outside the customer's SDK sequence, as `settled`.
        case refunded
    }

    public var kind: Kind
    /// Empty for `disconnected` and for a failure of a connection itself.
    public var paymentID: String
    public var details: ControlDetails

    public init(kind: Kind, paymentID: String, details: ControlDetails = ControlDetails()) {
        self.kind = kind
        self.paymentID = paymentID
        self.details = details
    }

    enum CodingKeys: String, CodingKey {
        case kind = "event"
        case paymentID = "payment_id"
        case details
    }

    /// The signal's arguments.
    public var signalArguments: [DBusValue] { [.string(kind.rawValue), .string(paymentID), details.dbusValue] }

    /// Reads a `PaymentEvent` signal; an unknown kind or a malformed value is a `DBusError`.
    public init(signal message: DBusMessage) throws(DBusError) {
        let arguments = message.arguments
        guard arguments.count == 3 else { throw DBusError(.typeMismatch, "PaymentEvent has 3 arguments, not \(arguments.count)") }
        let name = try arguments[0].decode(String.self)
        guard let kind = Kind(rawValue: name) else { throw DBusError(.typeMismatch, "no event kind \(name)") }
        self.init(kind: kind, paymentID: try arguments[1].decode(String.self), details: try ControlDetails(dbus: arguments[2]))
    }

    /// One line as people read it: kind, payment id, then the details.
    public var text: String { ([kind.rawValue, paymentID.isEmpty ? "-" : paymentID] + details.described).joined(separator: "  ") }
}

/// A payment as `PaymentStatus` and `ListPayments` give it: `(s payment_id, s status, a{sv} details)`.
public struct ControlPayment: Sendable, Hashable, Codable {
    public var paymentID: String
    /// `open`, `accepted`, `finished`, `cancelled`, `expired`, `other-paid` or `failed` (details `code`).
    public var status: String
    public var details: ControlDetails

    enum CodingKeys: String, CodingKey {
        case paymentID = "payment_id"
        case status, details
    }

    public init(paymentID: String, status: String, details: ControlDetails) {
        self.paymentID = paymentID
        self.status = status
        self.details = details
    }

    public static let signature = ControlRecord.signature

    public var dbusValue: DBusValue { ControlRecord.value(paymentID, status, details) }

    public init(dbus value: DBusValue) throws(DBusError) {
        (paymentID, status, details) = try ControlRecord.read(value, "a payment")
    }

    public var text: String { ControlRecord.text(paymentID, status, details) }
}

/// `(s id, s status, a{sv} details)`: how payments and vouchers are given.
package enum ControlRecord {
    package static let signature: DBusSignature = "(ssa{sv})"

    package static func value(_ id: String, _ status: String, _ details: ControlDetails) -> DBusValue {
        .structure([.string(id), .string(status), details.dbusValue])
    }

    package static func read(_ value: DBusValue, _ what: String) throws(DBusError) -> (String, String, ControlDetails) {
        guard case .structure(let fields) = value.unwrapped, fields.count == 3 else {
            throw DBusError(.typeMismatch, "\(what) is \(signature)")
        }
        return (try fields[0].decode(String.self), try fields[1].decode(String.self), try ControlDetails(dbus: fields[2]))
    }

    package static func text(_ id: String, _ status: String, _ details: ControlDetails) -> String {
        ([id, status] + details.described).joined(separator: "  ")
    }
}

extension ControlDetails {
    /// The details as people read them: amounts with their currency first, then the rest as key=value, but the receipt.
    package var described: [String] {
        var parts = [money(amount), money(total)].compactMap { $0.map { "\($0)" } }
        if tip != 0, let tip = money(tip) { parts.append("tip \(tip)") }
        var rest = self
        if money(amount) != nil || money(total) != nil { (rest.amount, rest.total, rest.tip, rest.currency) = (nil, nil, nil, nil) }
        // A receipt's base64 is for programs (`--json`, `blepayctl show`), not for a person's line.
        rest.receipt = nil
        let entries = (try? rest.dbusValue.decode([String: DBusValue].self)) ?? [:]
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            switch value.unwrapped {
            case .string(let text): parts.append("\(key)=\(text)")
            case .uint64(let number): parts.append("\(key)=\(number)")
            case .uint32(let number): parts.append("\(key)=\(number)")
            default: break
            }
        }
        return parts
    }
}

