import DBusKit

/// A pre-authorization voucher as `ObtainVoucher` and `ListVouchers` give it, and `blepayctl vouchers --json`
/// prints it: `(s voucher_id, s status, a{sv} details)`, the details from `ControlDetails`' one key table.
public struct ControlVoucher: Sendable, Hashable, Codable {
    public var voucherID: String
    /// `usable`, `used-up`, `expired` or `voided`.
    public var status: String
    public var details: ControlDetails

    enum CodingKeys: String, CodingKey {
        case voucherID = "voucher_id"
        case status, details
    }

    public init(voucherID: String, status: String, details: ControlDetails) {
        self.voucherID = voucherID
        self.status = status
        self.details = details
    }

    public static let signature = ControlRecord.signature

    public var dbusValue: DBusValue { ControlRecord.value(voucherID, status, details) }

    public init(dbus value: DBusValue) throws(DBusError) {
        (voucherID, status, details) = try ControlRecord.read(value, "a voucher")
    }

    public var text: String { ControlRecord.text(voucherID, status, details) }
}
