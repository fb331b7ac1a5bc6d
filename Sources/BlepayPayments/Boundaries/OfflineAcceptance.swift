import BlepayProtocol

/// What a business takes while it cannot reach the ledger: acceptances under a pre-authorization, checked here
/// offline before the payment is kept for settlement. The voucher must be signed by a trusted ledger key, issued to
/// the key that signed the acceptance for the instrument it names, in the payment's currency, valid when the
/// merchant signed the request, and cover the total on top of what its earlier uses spent; neither the voucher nor
/// the device may be on the ledger's deny list, and that list, signed by a trusted ledger key, must be recent: a
/// business that has not heard from the ledger for longer takes no voucher at all. The merchant's own risk limit caps
/// one payment; the limits on everything kept (count, total, age) are the queue's (`OfflineQueue`).
public struct OfflinePolicy: Sendable {
    public let trusted: TrustedLedgerKeys
    /// The one currency taken offline, and the largest total (amount plus tip) of one payment in it.
    public let currency: Currency
    public let maximumPaymentMinorUnits: UInt64
    /// How old the deny list may be (since the ledger issued it) for vouchers to be taken.
    public let maximumDenyListAgeMilliseconds: UInt64

    public init(
        trusted: TrustedLedgerKeys, currency: Currency, maximumPaymentMinorUnits: UInt64,
        maximumDenyListAgeMilliseconds: UInt64 = 86_400_000
    ) {
        self.trusted = trusted
        self.currency = currency
        self.maximumPaymentMinorUnits = maximumPaymentMinorUnits
        self.maximumDenyListAgeMilliseconds = maximumDenyListAgeMilliseconds
    }

    /// Nil when the acceptance may be kept; else why not, each reason the payer's. `denyList`: the newest the
    /// business holds; `now`: the business's clock, which judges the list's age.
    public func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, denyList: DenyList?, at now: Timestamp)
        -> PaymentError?
    {
        guard let presented = acceptance.preAuthorization else {
            return PaymentError(.preAuthorizationInvalid, "the business is offline: only a pre-authorized payment is taken")
        }
        let voucher = presented.voucher
        let total = acceptance.total
        guard total.currency == currency, total.minorUnits <= maximumPaymentMinorUnits else {
            return PaymentError(.limitExceeded, "offline, this business takes at most \(maximumPaymentMinorUnits) \(currency.code) per payment")
        }
        guard let key = trusted.key(id: voucher.ledgerKeyID),
            isValidSignature(voucher.signature, of: voucher.signingBytes, by: key)
        else { return PaymentError(.preAuthorizationInvalid, "the voucher is not signed by a trusted ledger key") }
        guard voucher.customerKey == acceptance.customerKey, voucher.instrumentID == acceptance.instrumentID else {
            return PaymentError(.preAuthorizationInvalid, "the voucher is for another key or instrument")
        }
        guard voucher.limit.currency == total.currency else {
            return PaymentError(.preAuthorizationInvalid, "the voucher is in \(voucher.limit.currency.code)")
        }
        // Judged on the merchant-signed request time, as the ledger judges it: the customer's clock has no say.
        guard voucher.issuedAt <= request.createdAt, request.createdAt < voucher.expiresAt else {
            return PaymentError(.preAuthorizationInvalid, "the voucher was not valid when the request was made")
        }
        guard total.minorUnits <= voucher.limit.minorUnits - presented.spentBeforeMinorUnits else {
            return PaymentError(.preAuthorizationInvalid, "the voucher has less left than \(total)")
        }
        guard let denyList,
            (try? denyList.verify(trusting: trusted, at: now, maximumAge: maximumDenyListAgeMilliseconds)) != nil
        else {
            return PaymentError(.ledgerOffline, "no deny list from the ledger in the last \(maximumDenyListAgeMilliseconds / 3_600_000) h: no voucher is taken")
        }
        if denyList.denies(voucher: voucher.voucherID) { return PaymentError(.preAuthorizationInvalid, "the voucher was voided") }
        if denyList.denies(key: acceptance.customerKey) { return PaymentError(.blocked, "the ledger blocked this device") }
        return nil
    }
}

/// Where a business keeps what it accepted offline until the ledger settles it. `keep` returns once the payment is
/// durable (nil), or why it was not kept: the merchant's limits on what may wait are reached, or the payment is
/// kept with another acceptance. `kept` reads a payment back, so that a result can be given again after a restart.
public protocol OfflineQueue: Sendable {
    func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> PaymentError?
    /// The payment kept under this id (waiting or decided), or nil: none is, or the store cannot be read.
    func kept(_ id: PaymentID) async -> KeptPayment?
}

/// A payment as it was kept (for settlement, or until its outcome is known): the signed pair, and when.
public struct KeptPayment: Sendable, Hashable {
    public let request: PaymentRequest
    public let acceptance: PaymentAcceptance
    public let keptAt: Timestamp

    public init(request: PaymentRequest, acceptance: PaymentAcceptance, keptAt: Timestamp) {
        self.request = request
        self.acceptance = acceptance
        self.keptAt = keptAt
    }
}
