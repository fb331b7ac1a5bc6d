import DBusKit

/// A payment kept for settlement as `ListSettlements` gives it and `blepayctl settlement list --json` prints it:
/// `(s payment_id, s state, a{sv} details)`, the details from `ControlDetails`' one key table.
public struct ControlSettlement: Sendable, Hashable, Codable {
    public var paymentID: String
    /// `waiting`, `sending` (in a batch the ledger has not answered), `settled` or `refused` (with the ledger's code).
    public var state: String
    public var details: ControlDetails

    enum CodingKeys: String, CodingKey {
        case paymentID = "payment_id"
        case state, details
    }

    public init(paymentID: String, state: String, details: ControlDetails) {
        self.paymentID = paymentID
        self.state = state
        self.details = details
    }

    public static let signature = ControlRecord.signature

    public var dbusValue: DBusValue { ControlRecord.value(paymentID, state, details) }

    public init(dbus value: DBusValue) throws(DBusError) {
        (paymentID, state, details) = try ControlRecord.read(value, "a settlement")
    }

    public var text: String { ControlRecord.text(paymentID, state, details) }
}
