/// Proof that a payment was executed (`settled`, signed by the ledger) or accepted under a pre-authorization while
/// both sides were offline (`pendingSettlement`, signed by the merchant: its acknowledgement that it took the
/// payment, which the customer keeps until the ledger settles it). It names the merchant paid and the payer's device
/// key, so that a receipt proves a payment to this merchant by this customer only.
public struct Receipt: Sendable, Hashable {
    public enum Status: UInt8, Sendable, Hashable, CaseIterable {
        case settled = 1
        case pendingSettlement = 2

        /// The stable name the control API and its history use (the daemons give one for every event that carries a
        /// receipt, so it is spelled out rather than reflected).
        public var name: String {
            switch self {
            case .settled: "settled"
            case .pendingSettlement: "pendingSettlement"
            }
        }
    }

    public let paymentID: PaymentID
    public let status: Status
    /// The ledger's transaction id, once settled.
    public let transactionID: String?
    public let amount: Money
    public let tipMinorUnits: UInt64
    public let issuedAt: Timestamp
    /// The merchant the request was signed for.
    public let merchantID: String
    /// The key that signed the winning acceptance: the customer device that paid.
    public let payerKey: Key32
    /// The ledger key that signed it (the first 8 bytes of SHA-256 of its public key); present exactly when settled.
    public let ledgerKeyID: FixedBytes<Bytes8>?
    /// Ed25519 by the merchant's signing key (its certificate's) over the receipt's signing bytes; present exactly
    /// when pending.
    public let merchantSignature: Signature64?
    /// Ed25519 by the ledger over the receipt's signing bytes; present exactly when settled.
    public let ledgerSignature: Signature64?

    public init(
        paymentID: PaymentID, status: Status, transactionID: String?, amount: Money, tipMinorUnits: UInt64,
        issuedAt: Timestamp, merchantID: String, payerKey: Key32, ledgerKeyID: FixedBytes<Bytes8>?,
        merchantSignature: Signature64? = nil, ledgerSignature: Signature64?
    ) throws(ProtocolError) {
        let settled = status == .settled
        guard settled == (ledgerSignature != nil), settled == (transactionID != nil), settled == (ledgerKeyID != nil),
            !settled == (merchantSignature != nil)
        else {
            throw ProtocolError(.invalidValue, "a settled receipt, and only one, has a transaction id and the ledger's key id and signature; a pending one the merchant's signature")
        }
        self.paymentID = paymentID
        self.status = status
        self.transactionID = try transactionID.map { (t) throws(ProtocolError) in
            try Text.validateIdentifier(t, field: "transaction id")
        }
        self.amount = amount
        self.tipMinorUnits = tipMinorUnits
        self.issuedAt = issuedAt
        self.merchantID = try Text.validateIdentifier(merchantID, field: "merchant id")
        self.payerKey = payerKey
        self.ledgerKeyID = ledgerKeyID
        self.merchantSignature = merchantSignature
        self.ledgerSignature = ledgerSignature
    }

}

/// Vouches, for a business's sessions, that its keys belong to a merchant the ledger knows. Signed by the ledger
/// (Ed25519); customers check it against the ledger key in their configuration before showing a request.
public struct MerchantCertificate: Sendable, Hashable {
    public let merchantID: String
    public let merchantName: String
    /// Signs payment requests (Ed25519).
    public let signingKey: Key32
    /// The business's Noise static key (X25519).
    public let noiseKey: Key32
    public let validFrom: Timestamp
    public let validUntil: Timestamp
    /// First 8 bytes of SHA-256 of the ledger public key that signed this, to pick among rotated ledger keys.
    public let ledgerKeyID: FixedBytes<Bytes8>
    public let signature: Signature64

    public init(
        merchantID: String, merchantName: String, signingKey: Key32, noiseKey: Key32, validFrom: Timestamp,
        validUntil: Timestamp, ledgerKeyID: FixedBytes<Bytes8>, signature: Signature64
    ) throws(ProtocolError) {
        guard validUntil > validFrom else { throw ProtocolError(.invalidValue, "a certificate ends after it starts") }
        self.merchantID = try Text.validateIdentifier(merchantID, field: "merchant id")
        self.merchantName = try Text.validateName(
            merchantName, field: "merchant name", limit: PaymentRequest.merchantNameLimit)
        self.signingKey = signingKey
        self.noiseKey = noiseKey
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.ledgerKeyID = ledgerKeyID
        self.signature = signature
    }
}

/// A pre-authorization the ledger issued to a customer's instrument while online: up to `limit` may be spent
/// offline until `expiresAt`, by acceptances signed with `customerKey`. Signed by the ledger (Ed25519).
public struct PreAuthorizationVoucher: Sendable, Hashable {
    public let voucherID: FixedBytes<Bytes8>
    public let instrumentID: String
    public let customerKey: Key32
    public let limit: Money
    public let issuedAt: Timestamp
    public let expiresAt: Timestamp
    public let ledgerKeyID: FixedBytes<Bytes8>
    public let signature: Signature64

    public init(
        voucherID: FixedBytes<Bytes8>, instrumentID: String, customerKey: Key32, limit: Money, issuedAt: Timestamp,
        expiresAt: Timestamp, ledgerKeyID: FixedBytes<Bytes8>, signature: Signature64
    ) throws(ProtocolError) {
        guard expiresAt > issuedAt else { throw ProtocolError(.invalidValue, "a voucher expires after it is issued") }
        self.voucherID = voucherID
        self.instrumentID = try Text.validateIdentifier(instrumentID, field: "instrument id")
        self.customerKey = customerKey
        self.limit = limit
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.ledgerKeyID = ledgerKeyID
        self.signature = signature
    }
}

/// A voucher presented with an offline acceptance. `sequence` counts the voucher's uses (1, 2, …) and
/// `spentBefore` what earlier uses spent; both are covered by the acceptance's signature, so a customer who
/// over-spends or reuses a sequence number has signed the proof of it.
public struct PreAuthorizationPresentation: Sendable, Hashable {
    public let voucher: PreAuthorizationVoucher
    public let sequence: UInt32
    public let spentBeforeMinorUnits: UInt64

    public init(voucher: PreAuthorizationVoucher, sequence: UInt32, spentBeforeMinorUnits: UInt64)
        throws(ProtocolError)
    {
        guard sequence >= 1 else { throw ProtocolError(.invalidValue, "voucher uses count from 1") }
        guard spentBeforeMinorUnits <= voucher.limit.minorUnits else {
            throw ProtocolError(.invalidAmount, "spent before exceeds the voucher's limit")
        }
        self.voucher = voucher
        self.sequence = sequence
        self.spentBeforeMinorUnits = spentBeforeMinorUnits
    }
}

/// What an offline business must refuse, as the ledger knew it at `issuedAt`: vouchers their customers voided (until
/// their rest is released; after that nothing settles from them anyway) and device keys that signed a double spend,
/// were revoked by the operator, or belong to a business of a merchant the operator blocked.
/// Signed by the ledger (Ed25519). The lists are kept ascending and without repeats, so that the encoding is canonical.
public struct DenyList: Sendable, Hashable {
    public let issuedAt: Timestamp
    public let voidedVouchers: [FixedBytes<Bytes8>]
    public let blockedKeys: [Key32]
    public let ledgerKeyID: FixedBytes<Bytes8>
    public let signature: Signature64

    /// The lists in any order; repeats are dropped.
    public init(
        issuedAt: Timestamp, voidedVouchers: [FixedBytes<Bytes8>], blockedKeys: [Key32], ledgerKeyID: FixedBytes<Bytes8>,
        signature: Signature64
    ) {
        self.issuedAt = issuedAt
        self.voidedVouchers = Self.ascending(voidedVouchers)
        self.blockedKeys = Self.ascending(blockedKeys)
        self.ledgerKeyID = ledgerKeyID
        self.signature = signature
    }

    /// Whether this list replaces `other`: it was issued later, or there is none.
    public func supersedes(_ other: DenyList?) -> Bool { other.map { $0.issuedAt < issuedAt } ?? true }

    public func denies(voucher: FixedBytes<Bytes8>) -> Bool { voidedVouchers.contains(voucher) }
    public func denies(key: Key32) -> Bool { blockedKeys.contains(key) }

    static func ascending<Size>(_ values: [FixedBytes<Size>]) -> [FixedBytes<Size>] {
        Array(Set(values)).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }
}
