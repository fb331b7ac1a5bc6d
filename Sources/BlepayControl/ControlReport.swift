import BlepayProtocol
import DBusKit

/// A merchant's takings on one day, as `DailyReport` gives them:
/// `(s merchant_id, s date, s time_zone, a(suttutx) currencies)`, each currency's totals in its minor units.
public struct ControlReport: Sendable, Hashable, Codable {
    public struct Totals: Sendable, Hashable, Codable {
        public var currency: String
        /// Payments settled that day, and the sum of their amounts and of their tips.
        public var count: UInt32
        public var gross: UInt64
        public var tips: UInt64
        /// Refunds made that day (of any day's payments), and their sum.
        public var refundCount: UInt32
        public var refunds: UInt64
        /// gross + tips − refunds: negative when the day refunded more than it took.
        public var net: Int64

        public init(
            currency: String, count: UInt32, gross: UInt64, tips: UInt64, refundCount: UInt32, refunds: UInt64, net: Int64
        ) {
            (self.currency, self.count, self.gross, self.tips) = (currency, count, gross, tips)
            (self.refundCount, self.refunds, self.net) = (refundCount, refunds, net)
        }

        enum CodingKeys: String, CodingKey {
            case currency, count, gross, tips, refunds, net
            case refundCount = "refund_count"
        }
    }

    public var merchantID: String
    public var date: String
    public var timeZone: String
    public var currencies: [Totals]

    enum CodingKeys: String, CodingKey {
        case date, currencies
        case merchantID = "merchant_id"
        case timeZone = "time_zone"
    }

    public init(merchantID: String, date: String, timeZone: String, currencies: [Totals]) {
        (self.merchantID, self.date, self.timeZone, self.currencies) = (merchantID, date, timeZone, currencies)
    }

    static let totalsSignature: DBusSignature = "(suttutx)"

    /// The method's four return values.
    public var dbusValues: [DBusValue] {
        [
            .string(merchantID), .string(date), .string(timeZone),
            .array(element: Self.totalsSignature, currencies.map {
                .structure([
                    .string($0.currency), .uint32($0.count), .uint64($0.gross), .uint64($0.tips), .uint32($0.refundCount),
                    .uint64($0.refunds), .int64($0.net),
                ])
            }),
        ]
    }

    public init(dbus values: [DBusValue]) throws(DBusError) {
        guard values.count == 4 else { throw DBusError(.typeMismatch, "a report is 4 values, not \(values.count)") }
        (merchantID, date, timeZone) = (try values[0].decode(String.self), try values[1].decode(String.self), try values[2].decode(String.self))
        currencies = []
        for value in try values[3].decode([DBusValue].self) {
            guard case .structure(let f) = value.unwrapped, f.count == 7 else {
                throw DBusError(.typeMismatch, "a currency's totals are \(Self.totalsSignature)")
            }
            currencies.append(Totals(
                currency: try f[0].decode(String.self), count: try f[1].decode(UInt32.self), gross: try f[2].decode(UInt64.self),
                tips: try f[3].decode(UInt64.self), refundCount: try f[4].decode(UInt32.self), refunds: try f[5].decode(UInt64.self),
                net: try f[6].decode(Int64.self)))
        }
    }

    /// The day's line, then one per currency, amounts in the currency's own terms.
    public var text: String {
        let lines = currencies.map { totals in
            func money(_ units: UInt64) -> String {
                (try? Money(minorUnits: units, currency: Currency(totals.currency))).map(\.description) ?? "\(units)"
            }
            let net = (totals.net < 0 ? "-" : "") + money(totals.net.magnitude)
            return "  \(totals.currency)  \(totals.count) payment\(totals.count == 1 ? "" : "s") \(money(totals.gross))"
                + "  tips \(money(totals.tips))  \(totals.refundCount) refund\(totals.refundCount == 1 ? "" : "s") "
                + "\(money(totals.refunds))  net \(net)"
        }
        return (["\(date) (\(timeZone))  merchant \(merchantID)"] + (lines.isEmpty ? ["  no payments"] : lines))
            .joined(separator: "\n")
    }
}
