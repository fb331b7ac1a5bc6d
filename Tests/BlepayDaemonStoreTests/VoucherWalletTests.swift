import BlepayDaemonStore
import BlepayProtocol
import Foundation
import Testing

/// The customer's vouchers on a real SQLite file: each use on disk before it is signed, never past a limit, never
/// reset.
@Suite struct VoucherWalletTests {
    @Test func usesCountUpAndCarryWhatWasSpentBeforeAcrossReopening() throws {
        let f = try WalletFixture()
        let voucher = try f.voucher(10_000)
        try f.wallet().add(voucher)

        let first = try f.wallet().present(.random(), total: eur(2_500), at: f.now)
        // A new process opening the same file goes on from where the last one stopped.
        let second = try f.wallet().present(.random(), total: eur(1_000), at: f.later(minutes: 1))
        #expect((first.sequence, first.spentBeforeMinorUnits) == (1, 0))
        #expect((second.sequence, second.spentBeforeMinorUnits) == (2, 2_500))
        #expect(first.voucher == voucher && second.voucher == voucher)
        let held = try #require(try f.wallet().vouchers().first)
        #expect(held.uses == 2 && held.spentMinorUnits == 3_500 && held.remainingMinorUnits == 6_500)
    }

    @Test func theLimitIsNeverPassed() throws {
        let f = try WalletFixture()
        let wallet = try f.wallet()
        try wallet.add(try f.voucher(1_000))
        _ = try wallet.present(.random(), total: eur(400), at: f.now)
        // 600 left: one more than that is refused, exactly that is taken, then nothing more.
        expectRefusal(.insufficient) { try wallet.present(.random(), total: eur(601), at: f.now) }
        _ = try wallet.present(.random(), total: eur(600), at: f.now)
        expectRefusal(.insufficient) { try wallet.present(.random(), total: eur(1), at: f.now) }
        #expect(try wallet.vouchers().first?.spentMinorUnits == 1_000)
    }

    @Test func aRetryOfOnePaymentGetsItsPresentationAgainAndNeverASecondRange() throws {
        let f = try WalletFixture()
        let wallet = try f.wallet()
        try wallet.add(try f.voucher(1_000))
        let payment = PaymentID.random()
        let first = try wallet.present(payment, total: eur(300), at: f.now)
        #expect(try wallet.present(payment, total: eur(300), at: f.later(minutes: 2)) == first)
        expectRefusal(.alreadySigned) { try wallet.present(payment, total: eur(350), at: f.now) }
        #expect(try wallet.vouchers().first?.spentMinorUnits == 300)
    }

    @Test func expiredVoidedNotYetValidAndOtherCurrencyVouchersAreNotUsed() throws {
        let f = try WalletFixture()
        let wallet = try f.wallet()
        expectRefusal(.noVoucher) { try wallet.present(.random(), total: eur(1), at: f.now) }
        let voucher = try f.voucher(1_000, hours: 1)
        try wallet.add(voucher)
        try wallet.add(try f.voucher(1_000, "USD"))
        // Expiry and validity by the customer's own clock.
        expectRefusal(.insufficient) { try wallet.present(.random(), total: eur(1), at: f.later(minutes: 60)) }
        expectRefusal(.insufficient) {
            try wallet.present(.random(), total: eur(1), at: Timestamp(millisecondsSince1970: voucher.issuedAt.millisecondsSince1970 - 1))
        }
        try wallet.void(voucher.voucherID, at: f.now)
        expectRefusal(.insufficient) { try wallet.present(.random(), total: eur(1), at: f.now) }
        #expect(try wallet.vouchers().first { $0.voucher == voucher }?.voidedAt == f.now)
        expectRefusal(.unknownVoucher) { try wallet.void(try FixedBytes(Array(repeating: 7, count: 8)), at: f.now) }
    }

    @Test func theVoucherExpiringSoonestIsUsedFirst() throws {
        let f = try WalletFixture()
        let wallet = try f.wallet()
        let later = try f.voucher(1_000, hours: 48)
        let sooner = try f.voucher(1_000, hours: 2)
        try wallet.add(later)
        try wallet.add(sooner)
        try wallet.add(sooner)  // kept once
        #expect(try wallet.present(.random(), total: eur(900), at: f.now).voucher == sooner)
        #expect(try wallet.present(.random(), total: eur(200), at: f.now).voucher == later)
        #expect(try wallet.vouchers().count == 2)
    }

    @Test func vouchersForAnotherDeviceOrNotSignedByTheLedgerAreRefused() throws {
        let f = try WalletFixture()
        let wallet = try f.wallet()
        let other = try WalletFixture()
        expectRefusal(.foreignVoucher) { try wallet.add(try f.voucher(1_000, for: other.deviceKey)) }
        expectRefusal(.foreignVoucher) { try wallet.add(try f.voucher(1_000, signedBy: other.ledger)) }
        #expect(try wallet.vouchers().isEmpty)
    }

    /// Losing the state file loses its vouchers: nothing is reset to be signed again from the first sequence.
    @Test func aLostStateFileLeavesNoVoucherToSignWith() throws {
        let f = try WalletFixture()
        try f.wallet().add(try f.voucher(1_000))
        _ = try f.wallet().present(.random(), total: eur(100), at: f.now)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f.path + suffix) }
        expectRefusal(.noVoucher) { try f.wallet().present(.random(), total: eur(100), at: f.now) }
    }
}

/// The body fails with the wallet's error `code`.
func expectRefusal(
    _ code: WalletError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    let error = #expect(throws: WalletError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, sourceLocation: sourceLocation)
}
