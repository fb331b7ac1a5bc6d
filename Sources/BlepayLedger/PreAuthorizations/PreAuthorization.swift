import BlepayProtocol

/// Funds a customer set aside, while online, for payments made while both sides are offline. Issuing moves the limit
/// from the customer's account into an escrow account of its own and hands out a ledger-signed voucher; each offline
/// payment, when a side comes back online, is settled from the escrow to the merchant. Voiding stops new use at once,
/// but what is left returns only at `releaseAt` (the voucher's expiry plus a grace), so that a merchant who accepted
/// offline before the void or the expiry and uploads later is still paid. Every merchant's payment id settles once;
/// each voucher use pays once, for the part of the limit it claims, which no other use may overlap; the rest is released
/// once.
public struct PreAuthorization: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, Codable {
        case available, voided, expired
    }

    /// How one offline payment fared at settlement.
    public enum Settlement: String, Sendable, Hashable, Codable, CaseIterable {
        case settled
        /// This payment was settled before: nothing moved again.
        case alreadySettled = "already_settled"
        case voucherExceeded = "voucher_exceeded"
        /// The merchant signed the request at or after the voucher's expiry.
        case voucherExpired = "voucher_expired"
        /// The merchant signed the request before the voucher was issued.
        case voucherNotYetValid = "voucher_not_yet_valid"
        case voucherVoided = "voucher_voided"
        /// The acceptance does not present this voucher.
        case unknownVoucher = "unknown_voucher"
        /// A voucher, request or acceptance signature is wrong, or the acceptance is for another request.
        case badSignature = "bad_signature"
        case amountMismatch = "amount_mismatch"
        /// The voucher's use number was already spent on another payment: the customer signed a double spend.
        case sequenceReused = "sequence_reused"
        /// The part of the limit the use claims overlaps one a settled payment claimed: a double spend too.
        case rangeOverlap = "range_overlap"
        /// The merchant cancelled the request at the ledger.
        case requestCancelled = "request_cancelled"
        /// The merchant's payment id was already paid by another payer: online, or from another voucher.
        case paymentConflict = "payment_conflict"
        /// The item is not a well-formed request and acceptance.
        case malformed

        /// Two acceptances of one voucher signed by its device key that cannot both be paid.
        public var isDoubleSpend: Bool { self == .sequenceReused || self == .rangeOverlap }
    }

    /// A merchant's payment: payment ids are the merchant's own, so two merchants may use the same one.
    public struct Payment: Sendable, Hashable {
        public let merchant: String
        public let id: PaymentID

        public init(merchant: String, id: PaymentID) {
            self.merchant = merchant
            self.id = id
        }
    }

    /// A settled use of the voucher: its sequence number and the part of the limit it claims,
    /// [spentBefore, spentBefore + total), paid by the transfer `transferID`.
    public struct Use: Sendable, Hashable {
        public let sequence: UInt32
        public let total: UInt64
        public let spentBefore: UInt64
        public let transferID: String

        public init(sequence: UInt32, total: UInt64, spentBefore: UInt64, transferID: String) {
            self.sequence = sequence
            self.total = total
            self.spentBefore = spentBefore
            self.transferID = transferID
        }

        public var range: Range<UInt64> { spentBefore..<spentBefore + total }

        /// Whether one device key signing both this use and `other` is a double spend, and which.
        public func conflict(with other: Use) -> Settlement? {
            if sequence == other.sequence { return .sequenceReused }
            return range.overlaps(other.range) ? .rangeOverlap : nil
        }
    }

    /// A settled payment a new acceptance conflicts with.
    public struct DoubleSpend: Sendable, Hashable {
        public let kind: Settlement
        public let settled: Payment
    }

    public let voucher: PreAuthorizationVoucher
    public let customer: AccountID
    /// When what is left returns to the customer: the voucher's expiry plus the settlement grace in force when it was
    /// issued. Until then a payment requested within the voucher's validity (and before any void) still settles.
    public let releaseAt: Timestamp
    public private(set) var state: State = .available
    /// When the customer voided it: payments requested from then on are refused.
    public private(set) var voidedAt: Timestamp?
    /// When the rest went back to the customer: nothing settles from then on.
    public private(set) var releasedAt: Timestamp?
    /// Settled payments by merchant and payment id.
    public private(set) var uses: [Payment: Use] = [:]

    /// A pre-authorization as storage kept it.
    public init(voucher: PreAuthorizationVoucher, customer: AccountID, releaseAt: Timestamp, state: State, voidedAt: Timestamp?,
        releasedAt: Timestamp?, uses: [Payment: Use])
    {
        self.voucher = voucher
        self.customer = customer
        self.releaseAt = releaseAt
        self.state = state
        self.voidedAt = voidedAt
        self.releasedAt = releasedAt
        self.uses = uses
    }

    public var escrow: AccountID { AccountID("escrow:\(voucher.voucherID)") }
    public var spent: UInt64 { uses.values.reduce(0) { $0 + $1.total } }
    /// What the escrow returns to the customer at the release.
    public var rest: UInt64 { voucher.limit.minorUnits - spent }

    /// The transfer that pays a use of a voucher from its escrow: named by the use, which pays one merchant's payment
    /// once, so that two merchants' payments of one id never share a name (and it fits a receipt's transaction id).
    public static func transferID(of voucher: FixedBytes<Bytes8>, sequence: UInt32) -> String { "offline:\(voucher):\(sequence)" }
    public var releaseID: String { "release:\(voucher.voucherID)" }

    /// Reserves `limit` from the customer's account and signs the voucher for `customerKey` (the device key). The
    /// rest returns `graceMilliseconds` after the voucher's expiry.
    public static func issue(
        id: FixedBytes<Bytes8>, instrumentID: String, customerKey: Key32, customer: AccountID, limit: Money,
        lifetimeMilliseconds: UInt64, graceMilliseconds: UInt64, at now: Timestamp, ledgerKey: SigningKey,
        journal: inout Journal
    ) throws(LedgerError) -> PreAuthorization {
        let voucher: PreAuthorizationVoucher
        do {
            voucher = try PreAuthorizationVoucher(
                voucherID: id, instrumentID: instrumentID, customerKey: customerKey, limit: limit, issuedAt: now,
                expiresAt: now.adding(milliseconds: lifetimeMilliseconds),
                ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey),
                signature: .unsigned
            ).signed(by: ledgerKey)
        } catch {
            throw LedgerError(.invalidAmount, error.message)
        }
        let preAuthorization = PreAuthorization(
            voucher: voucher, customer: customer, releaseAt: voucher.expiresAt.adding(milliseconds: graceMilliseconds),
            state: .available, voidedAt: nil, releasedAt: nil, uses: [:])
        journal.open(preAuthorization.escrow, kind: .escrow)
        try journal.transfer(id: "reserve:\(id)", from: customer, to: preAuthorization.escrow, amount: limit)
        return preAuthorization
    }

    /// Settles one offline payment: the request signed by `merchantKey`, the acceptance signed by the voucher's
    /// customer key for exactly that request, presenting this voucher, requested (by the merchant-signed request time)
    /// within the voucher's validity and before any void, with an unused sequence number and a claimed range within
    /// the limit that overlaps no settled one; and the rest not released yet. Honest uses claim disjoint ranges, so
    /// they settle in any order; a reused sequence or an overlap is a double spend (`doubleSpend(of:)` names the
    /// settled payment it conflicts with).
    public mutating func settle(
        _ request: PaymentRequest, _ acceptance: PaymentAcceptance, merchantKey: Key32, merchant: AccountID,
        ledgerKeys: TrustedLedgerKeys, journal: inout Journal
    ) -> Settlement {
        guard let presented = acceptance.preAuthorization, presented.voucher == voucher else { return .unknownVoucher }
        let payment = Payment(merchant: request.merchantID, id: acceptance.paymentID)
        let claim = Self.claim(of: acceptance, presented)
        if let use = uses[payment] {
            // Not the transfer's name: a use settled before uses were named by their sequence has the payment's.
            let same = use.sequence == claim.sequence && use.total == claim.total && use.spentBefore == claim.spentBefore
            return same ? .alreadySettled : .badSignature
        }
        guard let ledgerKey = ledgerKeys.key(id: voucher.ledgerKeyID),
            isValidSignature(voucher.signature, of: voucher.signingBytes, by: ledgerKey),
            isValidSignature(request.signature, of: request.signingBytes, by: merchantKey),
            acceptance.customerKey == voucher.customerKey, acceptance.requestHash == request.hash,
            acceptance.paymentID == request.paymentID,
            isValidSignature(acceptance.signature, of: acceptance.signingBytes, by: voucher.customerKey)
        else { return .badSignature }
        guard acceptance.amount == request.amount, acceptance.amount.currency == voucher.limit.currency else {
            return .amountMismatch
        }
        guard releasedAt == nil else { return state == .voided ? .voucherVoided : .voucherExpired }
        // Judged on the time the merchant signed its request: the acceptance's time is the customer's own clock,
        // which the customer, who gains from a late payment, controls.
        if let voidedAt, request.createdAt >= voidedAt { return .voucherVoided }
        guard request.createdAt >= voucher.issuedAt else { return .voucherNotYetValid }
        guard request.createdAt < voucher.expiresAt else { return .voucherExpired }
        if let doubleSpend = doubleSpend(by: claim) { return doubleSpend.kind }
        // Disjoint ranges within the limit never sum past it; the sum is checked too, for uses settled before ranges were.
        guard claim.range.upperBound <= voucher.limit.minorUnits, spent + claim.total <= voucher.limit.minorUnits else {
            return .voucherExceeded
        }
        do {
            try journal.transfer(id: claim.transferID, from: escrow, to: merchant, amount: acceptance.total)
        } catch {
            return .voucherExceeded
        }
        uses[payment] = claim
        return .settled
    }

    /// The settled payment an acceptance presenting this voucher conflicts with, if any: one of the same sequence
    /// number, else one whose claimed range overlaps (the lowest sequence, so that the answer is stable).
    public func doubleSpend(of acceptance: PaymentAcceptance) -> DoubleSpend? {
        guard let claim = Self.claim(of: acceptance), acceptance.preAuthorization?.voucher == voucher else { return nil }
        return doubleSpend(by: claim)
    }

    private func doubleSpend(by claim: Use) -> DoubleSpend? {
        let conflicts = uses.compactMap { payment, use in claim.conflict(with: use).map { (payment, use.sequence, $0) } }
        guard let (payment, _, kind) = conflicts.min(by: { a, b in
            (a.2 == .sequenceReused ? 0 : 1, a.1) < (b.2 == .sequenceReused ? 0 : 1, b.1)
        }) else { return nil }
        return DoubleSpend(kind: kind, settled: payment)
    }

    /// The use an offline acceptance claims, as it would be settled.
    public static func claim(of acceptance: PaymentAcceptance) -> Use? {
        acceptance.preAuthorization.map { presented in claim(of: acceptance, presented) }
    }

    static func claim(of acceptance: PaymentAcceptance, _ presented: PreAuthorizationPresentation) -> Use {
        Use(sequence: presented.sequence, total: acceptance.total.minorUnits, spentBefore: presented.spentBeforeMinorUnits,
            transferID: transferID(of: presented.voucher.voucherID, sequence: presented.sequence))
    }

    /// The ledger-signed receipt of an offline payment settled from a voucher at `settledAt` by the transfer
    /// `transferID`, as an online payment's.
    public static func receipt(
        of request: PaymentRequest, _ acceptance: PaymentAcceptance, transferID: String, settledAt: Timestamp,
        signedBy ledgerKey: SigningKey
    ) throws(LedgerError) -> Receipt {
        try Receipt.signed(request, acceptance, transactionID: transferID, at: settledAt, by: ledgerKey)
    }

    /// The customer stops new use at once: payments requested from `now` on are refused. What is left stays in
    /// escrow until `releaseAt`, for the payments the customer accepted before.
    public mutating func void(at now: Timestamp) throws(LedgerError) {
        guard state == .available else { throw LedgerError(.holdNotPending, "the pre-authorization is \(state.rawValue)") }
        state = .voided
        voidedAt = now
    }

    /// Once no payment can still be settled (at `releaseAt`), returns the rest to the customer, once; a voucher that
    /// was not voided is then expired. Returns whether it did.
    public mutating func release(at now: Timestamp, journal: inout Journal) throws(LedgerError) -> Bool {
        guard releasedAt == nil, now >= releaseAt else { return false }
        if rest > 0 {
            try journal.transfer(
                id: releaseID, from: escrow, to: customer,
                amount: try! Money(minorUnits: rest, currency: voucher.limit.currency))  // rest ≤ limit: valid
        }
        if state == .available { state = .expired }
        releasedAt = now
        return true
    }
}
