import DBusKit

/// An event or a refund of a payment as `GetPayment` gives it, `(s name, s label, a{sv} details)`: an event's kind
/// and time (ms since 1970, in decimal), or a refund's id and `refunded`.
public struct ControlEntry: Sendable, Hashable, Codable {
    public var name: String
    public var label: String
    public var details: ControlDetails

    public init(dbus value: DBusValue) throws(DBusError) {
        (name, label, details) = try ControlRecord.read(value, "a payment's event or refund")
    }

    public var text: String { ControlRecord.text(name, label, details) }

    /// The details alone, as `text` writes them.
    public var detailsText: String { details.described.joined(separator: "  ") }
}
