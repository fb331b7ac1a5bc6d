import BlepayDaemon
@testable import BlepayDaemonStore
import BlepayProtocol
import Testing

/// When auto-renew obtains a voucher, from what the customer holds: only vouchers in the configured currency that
/// can still pay count, for what is left on them and when the last of them expires.
@Suite struct VoucherRenewalTests {
    static let minute: Int64 = 60_000
    let policy = VoucherRenewal(
        currency: try! Currency("EUR"), renewBelowMinorUnits: 1_000, renewBeforeMilliseconds: 2 * 3_600_000)

    /// A voucher of `limit`, issued `issued` minutes from now (an hour ago by default) and expiring `expires` minutes
    /// from now (a day by default), with `spent` signed against it.
    func held(
        _ limit: UInt64, _ currency: String = "EUR", spent: UInt64 = 0, issued: Int64 = -60, expires: Int64 = 24 * 60,
        voided: Bool = false
    ) throws -> StoredVoucher {
        func at(_ minutes: Int64) -> Timestamp {
            Timestamp(millisecondsSince1970: UInt64(Int64(fixedNow.millisecondsSince1970) + minutes * Self.minute))
        }
        let voucher = try PreAuthorizationVoucher(
            voucherID: FixedBytes((0..<8).map { _ in UInt8.random(in: 0...255) }), instrumentID: "card-1",
            customerKey: SigningKey().publicKey, limit: Money(minorUnits: limit, currency: Currency(currency)),
            issuedAt: at(issued), expiresAt: at(expires), ledgerKeyID: TrustedLedgerKeys.keyID(of: SigningKey().publicKey),
            signature: .unsigned)
        return StoredVoucher(voucher: voucher, uses: spent > 0 ? 1 : 0, spentMinorUnits: spent, voidedAt: voided ? fixedNow : nil)
    }

    func isDue(_ vouchers: [StoredVoucher]) -> Bool { policy.isDue(holding: vouchers, at: fixedNow) }

    @Test func withNothingHeldOneIsDue() {
        #expect(isDue([]))
    }

    @Test func enoughLeftThatDoesNotExpireSoonIsKept() throws {
        #expect(!isDue([try held(5_000)]))
        #expect(!isDue([try held(5_000, spent: 4_000)]), "exactly renew_below left")
        #expect(!isDue([try held(5_000, spent: 4_400), try held(600)]), "what is left adds up across vouchers")
    }

    @Test func lessLeftThanRenewBelowIsDue() throws {
        #expect(isDue([try held(5_000, spent: 4_100)]))
        #expect(isDue([try held(500), try held(400)]))
    }

    @Test func allExpiringWithinTheWindowIsDue() throws {
        #expect(isDue([try held(5_000, expires: 90), try held(5_000, expires: 119)]))
        #expect(!isDue([try held(5_000, expires: 90), try held(5_000, expires: 10 * 60)]))
        let never = VoucherRenewal(currency: try Currency("EUR"), renewBelowMinorUnits: 0, renewBeforeMilliseconds: 0)
        #expect(!never.isDue(holding: [try held(5_000, expires: 1)], at: fixedNow), "a window of 0 waits for the expiry")
    }

    @Test func voidedExpiredUsedUpAndOtherCurrenciesDoNotCount() throws {
        #expect(isDue([try held(5_000, voided: true)]))
        #expect(isDue([try held(5_000, expires: 0)]))
        #expect(isDue([try held(5_000, issued: -48 * 60, expires: -60)]))
        #expect(isDue([try held(5_000, spent: 5_000)]))
        #expect(isDue([try held(5_000, "USD")]))
        #expect(isDue([try held(5_000, voided: true), try held(5_000, "USD"), try held(5_000, spent: 5_000)]))
    }

    @Test func oneIssuedAheadOfThisClockCounts() throws {
        // Issued by a ledger whose clock is five minutes ahead: not usable yet, but obtaining more would not help.
        #expect(!isDue([try held(5_000, issued: 5)]))
    }
}
