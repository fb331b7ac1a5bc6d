import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// `GET /v1/reports/daily`: a merchant's payments settled and refunds made in one day of a time zone, on both
/// databases. The test moves the times the ledger recorded to fixed instants, so the days are known.
@Suite struct DailyReportTests {
    @Test(arguments: StorageKind.allCases)
    func aDayCountsItsSettledPaymentsAndRefundsInTheTimeZoneAsked(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            // 02:00 UTC on 11 March is 22:00 on 10 March in New York.
            let early = try await RefundTests.paid(ledger, cafe, alice, amount: 1_000, tip: 100)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let (request, acceptance) = try voucher.pay(try ledger.request(by: cafe, amount: 500, online: false), sequence: 1,
                spentBefore: 0)
            _ = try await cafe.client.settle([(request, acceptance)], operation: "batch")
            let nextDay = try await RefundTests.paid(ledger, cafe, alice, amount: 700)
            let refund = try await cafe.client.refund(early.paymentID, CreateRefund(amount: 200, reason: nil), idempotencyKey: "r")
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE transfers SET created_at = ? WHERE id = (SELECT transfer FROM payments WHERE id = ?)",
                    [.integer(try Self.at("2026-03-11T02:00:00Z")), .text(early.paymentID.description)])
                try tx.run("UPDATE pre_authorization_uses SET settled_at = ? WHERE payment = ?",
                    [.integer(try Self.at("2026-03-11T15:00:00Z")), .text(request.paymentID.description)])
                try tx.run("UPDATE transfers SET created_at = ? WHERE id = (SELECT transfer FROM payments WHERE id = ?)",
                    [.integer(try Self.at("2026-03-12T10:00:00Z")), .text(nextDay.paymentID.description)])
                try tx.run("UPDATE refunds SET created_at = ? WHERE id = ?",
                    [.integer(try Self.at("2026-03-11T16:00:00Z")), .text(refund.id)])
            }

            let utc = try await cafe.client.dailyReport(date: "2026-03-11", timeZone: "UTC")
            #expect(utc.merchantId == cafe.account.id && utc.date == "2026-03-11" && utc.timeZone == "UTC")
            #expect(utc.currencies == [DailyTotals(currency: "EUR", count: 2, gross: 1_500, tips: 100, refundCount: 1, refunds: 200)])
            #expect(utc.currencies.first?.net == 1_400)
            let newYork = try await cafe.client.dailyReport(date: "2026-03-11", timeZone: "America/New_York")
            #expect(newYork.currencies == [DailyTotals(currency: "EUR", count: 1, gross: 500, tips: 0, refundCount: 1, refunds: 200)])
            let dayBefore = try await cafe.client.dailyReport(date: "2026-03-10", timeZone: "America/New_York")
            #expect(dayBefore.currencies == [DailyTotals(currency: "EUR", count: 1, gross: 1_000, tips: 100, refundCount: 0, refunds: 0)])
            #expect(try await cafe.client.dailyReport(date: "2026-03-12", timeZone: "UTC").currencies
                == [DailyTotals(currency: "EUR", count: 1, gross: 700, tips: 0, refundCount: 0, refunds: 0)])
            #expect(try await cafe.client.dailyReport(date: "2026-03-13", timeZone: "UTC").currencies.isEmpty)
            // Another merchant's day has none of it; the operator names the merchant.
            let bakery = try await ledger.merchant("Bakery")
            #expect(try await bakery.client.dailyReport(date: "2026-03-11", timeZone: "UTC").currencies.isEmpty)
            let byOperator: DailyReport = try await ledger.admin.get(
                "/v1/reports/daily?date=2026-03-11&merchant=\(cafe.account.id)")
            #expect(byOperator == utc)
        }
    }

    @Test func aBadDateOrTimeZoneIsAFieldsErrorAndACustomerHasNoReport() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 0)
            for (date, zone, field, code) in [
                ("2026-02-30", "UTC", "date", "invalid-date"), ("2026-3-1", "UTC", "date", "invalid-date"),
                ("yesterday", "UTC", "date", "invalid-date"), ("2026-03-01", "Mars/Olympus", "timeZone", "unknown-time-zone"),
            ] {
                let refusal = await RefundTests.refusal { _ = try await cafe.client.dailyReport(date: date, timeZone: zone) }
                #expect(refusal?.status == 400 && refusal?.detail.fields?.map(\.path) == [field]
                    && refusal?.detail.fields?.map(\.code) == [code], "\(date) \(zone)")
            }
            await RefundTests.expectStatus(403) { _ = try await alice.client.dailyReport(date: "2026-03-01", timeZone: "UTC") }
            await RefundTests.expectStatus(400) { let _: DailyReport = try await ledger.admin.get("/v1/reports/daily?date=2026-03-01") }
        }
    }

    static func at(_ text: String) throws -> Int64 {
        Int64(try #require(ISO8601DateFormatter().date(from: text)).timeIntervalSince1970 * 1000)
    }
}
