import BlepayProtocol

/// A voucher as the customer holds it: what it has signed against it so far, and whether it was voided.
public struct StoredVoucher: Sendable, Hashable {
    public let voucher: PreAuthorizationVoucher
    /// Uses signed so far; the next one is `uses + 1`.
    public let uses: UInt32
    /// Minor units signed away so far, delivered or not.
    public let spentMinorUnits: UInt64
    public let voidedAt: Timestamp?

    public var remainingMinorUnits: UInt64 { voucher.limit.minorUnits - min(spentMinorUnits, voucher.limit.minorUnits) }

    /// Whether anything may still be signed against it at `now` (the customer's own clock).
    public func isUsable(at now: Timestamp) -> Bool {
        voidedAt == nil && remainingMinorUnits > 0 && voucher.issuedAt <= now && now < voucher.expiresAt
    }

    /// Whether a payment of `total` may be signed against it at `now`.
    public func covers(_ total: Money, at now: Timestamp) -> Bool {
        isUsable(at: now) && total.currency == voucher.limit.currency && total.minorUnits <= remainingMinorUnits
    }
}
