import BlepayLedger
import BlepayProtocol
import Foundation

/// A merchant's day, per currency: the payments settled in it (online when their transfer posted, offline when their
/// settlement was accepted) and the refunds made in it, with the day's bounds in the time zone asked for.
extension LedgerOperations {
    public func dailyReport(_ tx: any SQLTransaction, date: String?, timeZone: String?, merchant: String?,
        for principal: Principal) throws -> DailyReport
    {
        let merchant = try Self.merchant(merchant, of: principal)
        guard let date else { throw APIError.invalid("date", "missing", "date is required") }
        let zoneName = timeZone ?? "UTC"
        guard let zone = TimeZone(identifier: zoneName) else {
            throw APIError.invalid("timeZone", "unknown-time-zone", "timeZone is an IANA time zone name such as Europe/Lisbon")
        }
        let (start, end) = try Self.day(date, in: zone)
        let bounds: [SQLValue] = [.text(merchant), .integer(start), .integer(end)]
        var totals: [String: (count: Int64, gross: Int64, tips: Int64, refundCount: Int64, refunds: Int64)] = [:]
        let settled = try tx.rows(
            """
            SELECT p.acceptance FROM payments p JOIN transfers t ON t.id = p.transfer
            WHERE p.merchant = ? AND p.status = 'settled' AND t.created_at >= ? AND t.created_at < ?
            UNION ALL
            SELECT acceptance FROM pre_authorization_uses WHERE merchant = ? AND settled_at >= ? AND settled_at < ?
            """, bounds + bounds)
        for row in settled {
            let acceptance: PaymentAcceptance
            do { acceptance = try PaymentAcceptance(encoded: try row.blob(0)) } catch {
                throw StorageError(.corrupt, "a settled payment's acceptance: \(error)")
            }
            totals[acceptance.amount.currency.code, default: (0, 0, 0, 0, 0)].count += 1
            totals[acceptance.amount.currency.code]!.gross += Int64(acceptance.amount.minorUnits)
            totals[acceptance.amount.currency.code]!.tips += Int64(acceptance.tipMinorUnits)
        }
        for row in try tx.rows(
            """
            SELECT currency, COUNT(*), SUM(amount) FROM refunds WHERE merchant = ? AND created_at >= ? AND created_at < ?
            GROUP BY currency
            """, bounds)
        {
            totals[try row.text(0), default: (0, 0, 0, 0, 0)].refundCount = try row.integer(1)
            totals[try row.text(0)]!.refunds = try row.integer(2)
        }
        return DailyReport(merchantId: merchant, date: date, timeZone: zoneName, currencies: totals.sorted { $0.key < $1.key }
            .map { currency, sums in
                DailyTotals(currency: currency, count: sums.count, gross: sums.gross, tips: sums.tips,
                    refundCount: sums.refundCount, refunds: sums.refunds)
            })
    }

    /// The first millisecond of `date` (`YYYY-MM-DD`, from 1970) in `zone`, and the first of the next day.
    public static func day(_ date: String, in zone: TimeZone) throws(APIError) -> (start: Int64, end: Int64) {
        let invalid = APIError.invalid("date", "invalid-date", "date is a calendar day, YYYY-MM-DD, from 1970")
        let parts = date.split(separator: "-", omittingEmptySubsequences: false)
        guard date.utf8.count == 10, parts.count == 3, parts.map(\.count) == [4, 2, 2],
            parts.allSatisfy({ $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), year >= 1970
        else { throw invalid }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let start = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.component(.year, from: start) == year, calendar.component(.month, from: start) == month,
            calendar.component(.day, from: start) == day,
            let end = calendar.date(byAdding: .day, value: 1, to: start)
        else { throw invalid }
        return (Int64(start.timeIntervalSince1970 * 1000), Int64(end.timeIntervalSince1970 * 1000))
    }
}
