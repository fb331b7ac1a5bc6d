/// `GET /v1/reports/daily`: a merchant's day in one time zone, per currency: the payments settled that day and the
/// refunds made that day.
public struct DailyReport: Codable, Sendable, Hashable {
    public let merchantId: String
    /// `YYYY-MM-DD`.
    public let date: String
    /// The IANA name the day's boundaries were computed in.
    public let timeZone: String
    public let currencies: [DailyTotals]

    public init(merchantId: String, date: String, timeZone: String, currencies: [DailyTotals]) {
        self.merchantId = merchantId
        self.date = date
        self.timeZone = timeZone
        self.currencies = currencies
    }
}

/// One currency of a `DailyReport`. Minor units; `net` is `gross + tips - refunds`.
public struct DailyTotals: Codable, Sendable, Hashable {
    public let currency: String
    /// Payments settled that day.
    public let count: Int64
    /// Their amounts.
    public let gross: Int64
    /// Their tips.
    public let tips: Int64
    public let refundCount: Int64
    /// Refunds made that day, of whichever day's payments.
    public let refunds: Int64
    public let net: Int64

    public init(currency: String, count: Int64, gross: Int64, tips: Int64, refundCount: Int64, refunds: Int64) {
        self.currency = currency
        self.count = count
        self.gross = gross
        self.tips = tips
        self.refundCount = refundCount
        self.refunds = refunds
        net = gross + tips - refunds
    }
}
