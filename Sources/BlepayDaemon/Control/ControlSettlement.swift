import BlepayDaemonStore
import BlepayProtocol
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

    public init(_ entry: SettlementQueue.Entry) {
        let (request, acceptance) = (entry.request, entry.acceptance)
        paymentID = request.paymentID.description
        details = ControlDetails()
        details.merchantID = request.merchantID
        details.reference = request.reference
        details.amount = acceptance.amount.minorUnits
        details.tip = acceptance.tipMinorUnits
        details.currency = acceptance.amount.currency.code
        details.voucherID = acceptance.preAuthorization?.voucher.voucherID.description
        details.queuedAt = entry.queuedAt.millisecondsSince1970
        switch entry.state {
        case .waiting: state = "waiting"
        case .sending: state = "sending"
        case .ended(let outcome, let at):
            details.endedAt = at.millisecondsSince1970
            switch outcome {
            case .settled: state = "settled"
            case .refused(let code): (state, details.code) = ("refused", code)
            }
        }
    }

    public static let signature = ControlRecord.signature

    public var dbusValue: DBusValue { ControlRecord.value(paymentID, state, details) }

    public init(dbus value: DBusValue) throws(DBusError) {
        (paymentID, state, details) = try ControlRecord.read(value, "a settlement")
    }

    public var text: String { ControlRecord.text(paymentID, state, details) }
}
