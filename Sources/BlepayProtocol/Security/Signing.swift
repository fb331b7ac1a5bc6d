import Crypto

// Building signed structures: each is built unsigned, its signing bytes (`WireSigned`) signed, and rebuilt with the
// signature, so the signature covers exactly what the decoder will check.

extension PaymentRequest {
    /// SHA-256 of the request's full encoding: what an acceptance is bound to.
    public var hash: Hash32 { try! Hash32(Array(SHA256.hash(data: encoded))) }

    /// The request signed by the merchant's signing key (the one its certificate vouches for).
    public func signed(by key: SigningKey) throws(ProtocolError) -> PaymentRequest {
        try PaymentRequest(
            paymentID: paymentID, amount: amount, reference: reference, merchantID: merchantID,
            merchantName: merchantName, createdAt: createdAt, expiresAt: expiresAt, businessOnline: businessOnline,
            signature: key.sign(signingBytes))
    }
}

extension PaymentAcceptance {
    /// SHA-256 of the acceptance's full encoding: what a go-ahead names.
    public var hash: Hash32 { try! Hash32(Array(SHA256.hash(data: encoded))) }

    /// The acceptance signed by the customer's device key; `customerKey` must be that key's public half.
    public func signed(by key: SigningKey) throws(ProtocolError) -> PaymentAcceptance {
        guard key.publicKey == customerKey else {
            throw ProtocolError(.invalidSignature, "the acceptance names another customer key")
        }
        return try PaymentAcceptance(
            paymentID: paymentID, amount: amount, tipMinorUnits: tipMinorUnits, instrumentID: instrumentID,
            delegatedInstrument: delegatedInstrument, createdAt: createdAt, requestHash: requestHash,
            sessionHash: sessionHash, customerKey: customerKey, preAuthorization: preAuthorization,
            signature: key.sign(signingBytes))
    }
}

extension MerchantCertificate {
    /// The certificate signed by the ledger key whose id it carries.
    public func signed(by ledgerKey: SigningKey) throws(ProtocolError) -> MerchantCertificate {
        guard TrustedLedgerKeys.keyID(of: ledgerKey.publicKey) == ledgerKeyID else {
            throw ProtocolError(.invalidCertificate, "the certificate names another ledger key")
        }
        return try MerchantCertificate(
            merchantID: merchantID, merchantName: merchantName, signingKey: signingKey, noiseKey: noiseKey,
            validFrom: validFrom, validUntil: validUntil, ledgerKeyID: ledgerKeyID,
            signature: ledgerKey.sign(signingBytes))
    }

    /// How far a checker's clock may be from the ledger's: a certificate is taken this long before its window opens
    /// and after it closes, so that a business enrolled a moment ago is not refused by a clock slightly behind.
    public static let clockTolerance: UInt64 = 300_000

    /// Checks what a customer must before showing any request (`docs/protocol.md` §7.3): the ledger's signature
    /// by a trusted key, the validity window (give or take `clockTolerance`), and that it vouches for the Noise
    /// static key of this session.
    public func verify(trusting ledgerKeys: TrustedLedgerKeys, at now: Timestamp, noiseKey remoteStatic: [UInt8])
        throws(ProtocolError)
    {
        guard let ledgerKey = ledgerKeys.key(id: ledgerKeyID) else {
            throw ProtocolError(.invalidCertificate, "signed by ledger key \(ledgerKeyID), which is not trusted")
        }
        guard isValidSignature(signature, of: signingBytes, by: ledgerKey) else {
            throw ProtocolError(.invalidCertificate, "the ledger's signature does not verify")
        }
        guard validFrom.millisecondsSince1970 <= now.millisecondsSince1970 + Self.clockTolerance,
            now.millisecondsSince1970 <= validUntil.millisecondsSince1970 + Self.clockTolerance
        else {
            throw ProtocolError(.certificateExpired, "valid from \(validFrom) until \(validUntil), now \(now)")
        }
        guard noiseKey.bytes == remoteStatic else {
            throw ProtocolError(.invalidCertificate, "the certificate vouches for another Noise key")
        }
    }
}

extension Receipt {
    /// The ledger's receipt of a settled payment, online or offline alike, signed by `ledgerKey`: what customer and
    /// business keep, and anyone verifies offline with the ledger's public key. `transactionID` names the transfer.
    public static func settled(
        _ request: PaymentRequest, _ acceptance: PaymentAcceptance, transactionID: String, at settledAt: Timestamp,
        signedBy ledgerKey: SigningKey
    ) throws(ProtocolError) -> Receipt {
        let unsigned = try Receipt(
            paymentID: acceptance.paymentID, status: .settled, transactionID: transactionID, amount: acceptance.amount,
            tipMinorUnits: acceptance.tipMinorUnits, issuedAt: settledAt, merchantID: request.merchantID,
            payerKey: acceptance.customerKey, ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey),
            ledgerSignature: .unsigned)
        return try Receipt(
            paymentID: unsigned.paymentID, status: .settled, transactionID: transactionID, amount: unsigned.amount,
            tipMinorUnits: unsigned.tipMinorUnits, issuedAt: settledAt, merchantID: unsigned.merchantID,
            payerKey: unsigned.payerKey, ledgerKeyID: unsigned.ledgerKeyID, ledgerSignature: ledgerKey.sign(unsigned.signingBytes))
    }

    /// The merchant's acknowledgement of a payment it keeps for settlement, under a pre-authorization, signed by its
    /// signing key (the one its certificate vouches for): pending until the ledger settles it.
    public static func pending(
        _ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp, signedBy merchantKey: SigningKey
    ) throws(ProtocolError) -> Receipt {
        let unsigned = try Receipt(
            paymentID: request.paymentID, status: .pendingSettlement, transactionID: nil, amount: acceptance.amount,
            tipMinorUnits: acceptance.tipMinorUnits, issuedAt: now, merchantID: request.merchantID,
            payerKey: acceptance.customerKey, ledgerKeyID: nil, merchantSignature: .unsigned, ledgerSignature: nil)
        return try Receipt(
            paymentID: unsigned.paymentID, status: .pendingSettlement, transactionID: nil, amount: unsigned.amount,
            tipMinorUnits: unsigned.tipMinorUnits, issuedAt: now, merchantID: unsigned.merchantID,
            payerKey: unsigned.payerKey, ledgerKeyID: nil, merchantSignature: merchantKey.sign(unsigned.signingBytes),
            ledgerSignature: nil)
    }

    /// Checks, with no network, that this pending receipt is the acknowledgement of the merchant whose certificate
    /// this is, for `acceptance` of `request`.
    public func verifyAcknowledgement(
        of request: PaymentRequest, _ acceptance: PaymentAcceptance, by certificate: MerchantCertificate
    ) throws(ProtocolError) {
        guard status == .pendingSettlement, let merchantSignature,
            isValidSignature(merchantSignature, of: signingBytes, by: certificate.signingKey)
        else { throw ProtocolError(.invalidSignature, "the acknowledgement is not signed by the merchant") }
        guard names(request, acceptance), merchantID == certificate.merchantID
        else { throw ProtocolError(.invalidValue, "the acknowledgement is for another payment, merchant, payer or total") }
    }

    /// Checks, with no network, that this receipt proves `acceptance` of `request` was paid (`docs/protocol.md`
    /// §6.4): settled, signed by a trusted ledger key, for this payment, merchant, payer, amount and tip.
    public func verify(paying request: PaymentRequest, with acceptance: PaymentAcceptance, trusting keys: TrustedLedgerKeys)
        throws(ProtocolError)
    {
        guard status == .settled, ledgerKeyID != nil, ledgerSignature != nil else {
            throw ProtocolError(.invalidValue, "the receipt is not a settled one")
        }
        guard isSigned(trusting: keys) else {
            throw ProtocolError(.invalidSignature, "the receipt is not signed by a trusted ledger key")
        }
        guard names(request, acceptance)
        else { throw ProtocolError(.invalidValue, "the receipt is for another payment, merchant, payer or total") }
    }

    /// Whether the ledger key its key id names is one of `keys`, and signed it: what any settled receipt must be,
    /// whichever payment it proves.
    public func isSigned(trusting keys: TrustedLedgerKeys) -> Bool {
        guard let ledgerKeyID, let ledgerSignature, let key = keys.key(id: ledgerKeyID) else { return false }
        return isValidSignature(ledgerSignature, of: signingBytes, by: key)
    }

    /// Whether it is for `acceptance` of `request`: its payment and merchant, the acceptance's payer and total.
    private func names(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) -> Bool {
        paymentID == request.paymentID && merchantID == request.merchantID && payerKey == acceptance.customerKey
            && amount == acceptance.amount && tipMinorUnits == acceptance.tipMinorUnits
    }
}

extension PreAuthorizationVoucher {
    /// The voucher signed by the ledger key whose id it carries.
    public func signed(by ledgerKey: SigningKey) throws(ProtocolError) -> PreAuthorizationVoucher {
        guard TrustedLedgerKeys.keyID(of: ledgerKey.publicKey) == ledgerKeyID else {
            throw ProtocolError(.invalidSignature, "the voucher names another ledger key")
        }
        return try PreAuthorizationVoucher(
            voucherID: voucherID, instrumentID: instrumentID, customerKey: customerKey, limit: limit,
            issuedAt: issuedAt, expiresAt: expiresAt, ledgerKeyID: ledgerKeyID, signature: ledgerKey.sign(signingBytes))
    }
}

extension DenyList {
    /// The deny list signed by the ledger key whose id it carries.
    public func signed(by ledgerKey: SigningKey) throws(ProtocolError) -> DenyList {
        guard TrustedLedgerKeys.keyID(of: ledgerKey.publicKey) == ledgerKeyID else {
            throw ProtocolError(.invalidSignature, "the deny list names another ledger key")
        }
        return DenyList(
            issuedAt: issuedAt, voidedVouchers: voidedVouchers, blockedKeys: blockedKeys, ledgerKeyID: ledgerKeyID,
            signature: try ledgerKey.sign(signingBytes))
    }

    /// Checks what a business must before relying on the list offline: the ledger's signature by a trusted key, and
    /// that it is recent: issued at most `maximumAge` ms before `now` and not later than `now` (give or take the
    /// certificates' clock tolerance). A stale list must not be trusted to be complete.
    public func verify(trusting ledgerKeys: TrustedLedgerKeys, at now: Timestamp, maximumAge: UInt64) throws(ProtocolError) {
        guard let ledgerKey = ledgerKeys.key(id: ledgerKeyID) else {
            throw ProtocolError(.invalidSignature, "signed by ledger key \(ledgerKeyID), which is not trusted")
        }
        guard isValidSignature(signature, of: signingBytes, by: ledgerKey) else {
            throw ProtocolError(.invalidSignature, "the ledger's signature does not verify")
        }
        let tolerance = MerchantCertificate.clockTolerance
        guard issuedAt.millisecondsSince1970 <= now.millisecondsSince1970 + tolerance,
            now.millisecondsSince1970 <= issuedAt.millisecondsSince1970 + maximumAge + tolerance
        else { throw ProtocolError(.certificateExpired, "the deny list was issued at \(issuedAt), now \(now)") }
    }
}

extension RefundReceipt {
    /// The refund receipt signed by the ledger key whose id it carries.
    public func signed(by ledgerKey: SigningKey) throws(ProtocolError) -> RefundReceipt {
        guard TrustedLedgerKeys.keyID(of: ledgerKey.publicKey) == ledgerKeyID else {
            throw ProtocolError(.invalidSignature, "the refund receipt names another ledger key")
        }
        return try RefundReceipt(
            refundID: refundID, paymentID: paymentID, merchantID: merchantID, payerKey: payerKey, amount: amount,
            refundedMinorUnits: refundedMinorUnits, paidMinorUnits: paidMinorUnits, reason: reason, issuedAt: issuedAt,
            ledgerKeyID: ledgerKeyID, signature: ledgerKey.sign(signingBytes))
    }

    /// Checks, with no network, that a trusted ledger key signed it.
    public func verify(trusting ledgerKeys: TrustedLedgerKeys) throws(ProtocolError) {
        guard let ledgerKey = ledgerKeys.key(id: ledgerKeyID) else {
            throw ProtocolError(.invalidSignature, "signed by ledger key \(ledgerKeyID), which is not trusted")
        }
        guard isValidSignature(signature, of: signingBytes, by: ledgerKey) else {
            throw ProtocolError(.invalidSignature, "the ledger's signature does not verify")
        }
    }
}
