import BlepayDaemonStore
import BlepayProtocol

/// When the customer daemon obtains a voucher by itself: once what its vouchers in `currency` could still pay is
/// below `renewBelowMinorUnits`, or once all of them expire within `renewBeforeMilliseconds`. Voided, expired and
/// used-up vouchers pay nothing and do not count.
public struct VoucherRenewal: Sendable, Hashable {
    public let currency: Currency
    public let renewBelowMinorUnits: UInt64
    public let renewBeforeMilliseconds: UInt64

    public init(currency: Currency, renewBelowMinorUnits: UInt64, renewBeforeMilliseconds: UInt64) {
        self.currency = currency
        self.renewBelowMinorUnits = renewBelowMinorUnits
        self.renewBeforeMilliseconds = renewBeforeMilliseconds
    }

    /// Whether a voucher should be obtained at `now`, holding `vouchers`.
    public func isDue(holding vouchers: [StoredVoucher], at now: Timestamp) -> Bool {
        // A voucher issued ahead of this device's clock counts as it will be once valid: were it left out, a clock
        // behind the ledger's would have a new voucher obtained at every probe.
        let usable = vouchers.filter {
            $0.voucher.limit.currency == currency && $0.isUsable(at: max(now, $0.voucher.issuedAt))
        }
        guard let lastExpiry = usable.map(\.voucher.expiresAt).max() else { return true }
        let remaining = usable.reduce(0) { $0 + $1.remainingMinorUnits }
        return remaining < renewBelowMinorUnits || lastExpiry < now.adding(milliseconds: renewBeforeMilliseconds)
    }
}
