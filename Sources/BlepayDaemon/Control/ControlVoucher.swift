import BlepayDaemonStore
import BlepayProtocol
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

    public init(_ stored: StoredVoucher, at now: Timestamp) {
        let voucher = stored.voucher
        voucherID = voucher.voucherID.description
        status = if stored.voidedAt != nil { "voided" }
            else if now >= voucher.expiresAt { "expired" }
            else if stored.remainingMinorUnits == 0 { "used-up" }
            else { "usable" }
        details = ControlDetails()
        details.amount = voucher.limit.minorUnits
        details.currency = voucher.limit.currency.code
        details.instrumentID = voucher.instrumentID
        details.spent = stored.spentMinorUnits
        details.uses = stored.uses
        details.issuedAt = voucher.issuedAt.millisecondsSince1970
        details.expiresAt = voucher.expiresAt.millisecondsSince1970
        details.voidedAt = stored.voidedAt?.millisecondsSince1970
    }

    public static let signature = ControlRecord.signature

    public var dbusValue: DBusValue { ControlRecord.value(voucherID, status, details) }

    public init(dbus value: DBusValue) throws(DBusError) {
        (voucherID, status, details) = try ControlRecord.read(value, "a voucher")
    }

    public var text: String { ControlRecord.text(voucherID, status, details) }
}
