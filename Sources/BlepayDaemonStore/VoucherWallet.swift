import BlepayProtocol
import Foundation
import GRDB

/// The customer's pre-authorization vouchers, and every use signed against them. A use is committed to disk before
/// its presentation is returned for signing, so no crash can lead the customer to sign one sequence or one range of a
/// voucher twice, or past its limit; a use signed and never delivered still counts. A state file that is lost takes
/// its vouchers with it: they are unusable from then on, never reset.
public struct VoucherWallet: Sendable {
    private let store: DaemonStore
    private static func failure(_ why: String) -> WalletError { WalletError(.storage, why) }
    private let deviceKey: Key32
    private let trusted: TrustedLedgerKeys

    /// Holds vouchers issued to `deviceKey` and signed by one of `trusted`.
    public init(store: DaemonStore, deviceKey: Key32, trusting trusted: TrustedLedgerKeys) {
        self.store = store
        self.deviceKey = deviceKey
        self.trusted = trusted
    }

    /// Keeps a voucher the ledger issued; keeping one already held changes nothing.
    public func add(_ voucher: PreAuthorizationVoucher) throws(WalletError) {
        guard voucher.customerKey == deviceKey else {
            throw WalletError(.foreignVoucher, "voucher \(voucher.voucherID) is for another device")
        }
        guard let key = trusted.key(id: voucher.ledgerKeyID),
            isValidSignature(voucher.signature, of: voucher.signingBytes, by: key)
        else { throw WalletError(.foreignVoucher, "voucher \(voucher.voucherID) is not signed by a trusted ledger key") }
        try store.write(failing: Self.failure) { db in
            try db.execute(
                sql: """
                    INSERT INTO vouchers (id, encoded, currency, expires_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (id) DO NOTHING
                    """,
                arguments: [
                    Data(voucher.voucherID.bytes), Data(voucher.encoded), voucher.limit.currency.code,
                    Int64(voucher.expiresAt.millisecondsSince1970),
                ])
        }
    }

    /// Every voucher held, soonest to expire first.
    public func vouchers() throws(WalletError) -> [StoredVoucher] {
        try store.read(failing: Self.failure) { db in try Self.fetch(db) }
    }

    /// Stops the voucher's use at once (the ledger is told by the caller); its signed uses stay.
    public func void(_ id: FixedBytes<Bytes8>, at now: Timestamp) throws(WalletError) {
        let changed = try store.write(failing: Self.failure) { db in
            try db.execute(
                sql: "UPDATE vouchers SET voided_at = coalesce(voided_at, ?) WHERE id = ?",
                arguments: [Int64(now.millisecondsSince1970), Data(id.bytes)])
            return db.changesCount
        }
        guard changed == 1 else { throw WalletError(.unknownVoucher, "no voucher \(id) is held") }
    }

    /// The presentation under which the customer signs `payment` for `total`, its use on disk before this returns:
    /// the next sequence of the voucher in the currency that expires soonest and still covers the total. Asked again
    /// for the same payment and total (a retry after a crash), the same presentation.
    public func present(_ payment: PaymentID, total: Money, at now: Timestamp) throws(WalletError)
        -> PreAuthorizationPresentation
    {
        let outcome: Result<PreAuthorizationPresentation, WalletError> = try store.write(failing: Self.failure) { db in
            if let earlier = try Self.use(of: payment, in: db) {
                guard earlier.total == total else {
                    return .failure(WalletError(.alreadySigned, "payment \(payment) was signed for \(earlier.total)"))
                }
                return .success(earlier.presentation)
            }
            let held = try Self.fetch(db).filter { $0.voucher.limit.currency == total.currency }
            guard !held.isEmpty else {
                return .failure(WalletError(.noVoucher, "no voucher in \(total.currency.code) is held"))
            }
            guard let chosen = held.first(where: { $0.covers(total, at: now) }) else {
                return .failure(WalletError(.insufficient, "no usable voucher in \(total.currency.code) covers \(total)"))
            }
            let presentation = try PreAuthorizationPresentation(
                voucher: chosen.voucher, sequence: chosen.uses + 1, spentBeforeMinorUnits: chosen.spentMinorUnits)
            try db.execute(
                sql: """
                    INSERT INTO voucher_uses (voucher_id, sequence, payment_id, total, spent_before, signed_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    Data(chosen.voucher.voucherID.bytes), Int64(presentation.sequence), Data(payment.bytes),
                    Int64(total.minorUnits), Int64(chosen.spentMinorUnits), Int64(now.millisecondsSince1970),
                ])
            try db.execute(
                sql: "UPDATE vouchers SET uses = uses + 1, spent = spent + ? WHERE id = ?",
                arguments: [Int64(total.minorUnits), Data(chosen.voucher.voucherID.bytes)])
            return .success(presentation)
        }
        return try outcome.get()
    }

    private static func fetch(_ db: Database) throws -> [StoredVoucher] {
        try Row.fetchAll(db, sql: "SELECT encoded, uses, spent, voided_at FROM vouchers ORDER BY expires_at, id").map { row in
            StoredVoucher(
                voucher: try PreAuthorizationVoucher(encoded: Array(row["encoded"] as Data)),
                uses: UInt32(row["uses"] as Int64), spentMinorUnits: UInt64(row["spent"] as Int64),
                voidedAt: (row["voided_at"] as Int64?).map { Timestamp(millisecondsSince1970: UInt64($0)) })
        }
    }

    private static func use(of payment: PaymentID, in db: Database) throws
        -> (total: Money, presentation: PreAuthorizationPresentation)?
    {
        guard let row = try Row.fetchOne(
            db,
            sql: """
                SELECT v.encoded, u.sequence, u.total, u.spent_before FROM voucher_uses u
                JOIN vouchers v ON v.id = u.voucher_id WHERE u.payment_id = ?
                """,
            arguments: [Data(payment.bytes)])
        else { return nil }
        let voucher = try PreAuthorizationVoucher(encoded: Array(row["encoded"] as Data))
        let total = try Money(minorUnits: UInt64(row["total"] as Int64), currency: voucher.limit.currency)
        let presentation = try PreAuthorizationPresentation(
            voucher: voucher, sequence: UInt32(row["sequence"] as Int64),
            spentBeforeMinorUnits: UInt64(row["spent_before"] as Int64))
        return (total, presentation)
    }

    /// Runs `body`, its failures reported as the state file's.
}
