// Field tables of the ledger-signed structures and of the structures nested in messages.

extension Receipt: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        w.uint(2, UInt64(status.rawValue))
        w.string(3, transactionID)
        w.money(4, amount)  // 4 amount, 5 currency
        w.uint(6, tipMinorUnits)
        w.uint(7, issuedAt.millisecondsSince1970)
        w.string(8, merchantID)
        w.bytes(9, payerKey.bytes)
        w.bytes(10, ledgerKeyID?.bytes)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(11, merchantSignature?.bytes)
        w.bytes(100, ledgerSignature?.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        guard let status = Status(rawValue: try r.uint(2, "status", as: UInt8.self)) else {
            throw ProtocolError(.invalidValue, "unknown receipt status")
        }
        try self.init(
            paymentID: r.paymentID(1), status: status, transactionID: r.optionalString(3, "transaction id", limit: 64),
            amount: r.money(4, "amount"), tipMinorUnits: r.uint(6, "tip"), issuedAt: r.timestamp(7, "issued at"),
            merchantID: r.string(8, "merchant id", limit: 64), payerKey: r.fixed(9, "payer key"),
            ledgerKeyID: r.optionalFixed(10), merchantSignature: r.optionalFixed(11), ledgerSignature: r.optionalFixed(100))
    }
}

extension RefundReceipt: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.string(1, refundID)
        w.bytes(2, paymentID.bytes)
        w.string(3, merchantID)
        w.bytes(4, payerKey.bytes)
        w.money(5, amount)  // 5 amount, 6 currency
        w.uint(7, refundedMinorUnits)
        w.uint(8, paidMinorUnits)
        w.string(9, reason)
        w.uint(10, issuedAt.millisecondsSince1970)
        w.bytes(11, ledgerKeyID.bytes)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            refundID: r.string(1, "refund id", limit: 64), paymentID: r.paymentID(2),
            merchantID: r.string(3, "merchant id", limit: 64), payerKey: r.fixed(4, "payer key"),
            amount: r.money(5, "amount"), refundedMinorUnits: r.uint(7, "refunded"), paidMinorUnits: r.uint(8, "paid"),
            reason: r.optionalString(9, "reason", limit: RefundReceipt.reasonLimit),
            issuedAt: r.timestamp(10, "issued at"), ledgerKeyID: r.fixed(11, "ledger key id"),
            signature: r.fixed(100, "signature"))
    }
}

extension MerchantCertificate: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.string(1, merchantID)
        w.string(2, merchantName)
        w.bytes(3, signingKey.bytes)
        w.bytes(4, noiseKey.bytes)
        w.uint(5, validFrom.millisecondsSince1970)
        w.uint(6, validUntil.millisecondsSince1970)
        w.bytes(7, ledgerKeyID.bytes)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            merchantID: r.string(1, "merchant id", limit: 64),
            merchantName: r.string(2, "merchant name", limit: PaymentRequest.merchantNameLimit),
            signingKey: r.fixed(3, "signing key"), noiseKey: r.fixed(4, "noise key"),
            validFrom: r.timestamp(5, "valid from"), validUntil: r.timestamp(6, "valid until"),
            ledgerKeyID: r.fixed(7, "ledger key id"), signature: r.fixed(100, "signature"))
    }
}

extension PreAuthorizationVoucher: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.bytes(1, voucherID.bytes)
        w.string(2, instrumentID)
        w.bytes(3, customerKey.bytes)
        w.money(4, limit)  // 4 amount, 5 currency
        w.uint(6, issuedAt.millisecondsSince1970)
        w.uint(7, expiresAt.millisecondsSince1970)
        w.bytes(8, ledgerKeyID.bytes)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            voucherID: r.fixed(1, "voucher id"), instrumentID: r.string(2, "instrument id", limit: 64),
            customerKey: r.fixed(3, "customer key"), limit: r.money(4, "limit"),
            issuedAt: r.timestamp(6, "issued at"), expiresAt: r.timestamp(7, "expires at"),
            ledgerKeyID: r.fixed(8, "ledger key id"), signature: r.fixed(100, "signature"))
    }
}

extension PreAuthorizationPresentation: FieldCodable {
    /// Covered by the acceptance's signature, so unknown fields are rejected as in signed structures.
    static let isSigned = true

    func encodeFields(into w: inout FieldWriter) {
        w.nested(1, voucher)
        w.uint(2, UInt64(sequence))
        w.uint(3, spentBeforeMinorUnits)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            voucher: r.nested(1, "voucher"), sequence: r.uint(2, "sequence", as: UInt32.self),
            spentBeforeMinorUnits: r.uint(3, "spent before"))
    }
}

extension ProtocolInfo: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.bytes(1, versions)
        w.uint(2, UInt64(capabilities.rawValue))
        w.uint(3, UInt64(maximumMessageSize))
        // Odd: a peer that predates the channel skips it (§5.1) and speaks GATT.
        if let channelPSM { w.uint(5, UInt64(channelPSM)) }
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        // Clamped, then range-checked by the initializer: anything past 255 is `invalidValue`.
        try self.init(
            versions: Array(r.bytes(1, "versions")), capabilities: r.capabilities(2),
            maximumMessageSize: r.uint(3, "maximum message size", as: UInt16.self),
            channelPSM: r.optionalUInt(5).map { UInt16(clamping: $0) })
    }
}

extension HandshakePayload.Offer: FieldCodable {
    static let isSigned = false
    func encodeFields(into w: inout FieldWriter) { w.bytes(1, versions) }
    init(fields r: inout FieldReader) throws(ProtocolError) { try self.init(versions: Array(r.bytes(1, "versions"))) }
}

extension HandshakePayload.Choice: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.uint(1, UInt64(version))
        w.uint(2, UInt64(capabilities.rawValue))
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        self.init(version: try r.uint(1, "version", as: UInt8.self), capabilities: try r.capabilities(2))
    }
}

extension HandshakePayload.Credentials: FieldCodable {
    static let isSigned = false
    func encodeFields(into w: inout FieldWriter) { w.nested(1, certificate) }
    init(fields r: inout FieldReader) throws(ProtocolError) { self.init(certificate: try r.nested(1, "certificate")) }
}

extension FieldReader {
    /// Capability bits this version does not define are kept and otherwise ignored: they announce what a newer
    /// peer can do.
    mutating func capabilities(_ tag: UInt8) throws(ProtocolError) -> Capabilities {
        Capabilities(rawValue: try uint(tag, "capabilities", as: UInt8.self))
    }
}

extension DenyList: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.uint(1, issuedAt.millisecondsSince1970)
        // Absent when empty, like every optional field.
        w.bytes(2, voidedVouchers.isEmpty ? nil : voidedVouchers.flatMap(\.bytes))
        w.bytes(3, blockedKeys.isEmpty ? nil : blockedKeys.flatMap(\.bytes))
        w.bytes(4, ledgerKeyID.bytes)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            issuedAt: r.timestamp(1, "issued at"), voidedVouchers: Self.list(r.optionalBytes(2), "voided vouchers"),
            blockedKeys: Self.list(r.optionalBytes(3), "blocked keys"), ledgerKeyID: r.fixed(4, "ledger key id"),
            signature: r.fixed(100, "signature"))
    }

    /// A run of fixed-size values, ascending without repeats: any other order would be a second encoding of the same list.
    private static func list<Size>(_ bytes: ArraySlice<UInt8>?, _ name: String) throws(ProtocolError) -> [FixedBytes<Size>] {
        guard let bytes else { return [] }
        guard !bytes.isEmpty else { throw ProtocolError(.nonCanonical, "\(name) is present but empty") }
        guard bytes.count % Size.count == 0 else {
            throw ProtocolError(.invalidLength, "\(name) is not a run of \(Size.count)-byte values")
        }
        var values: [FixedBytes<Size>] = []
        for start in stride(from: bytes.startIndex, to: bytes.endIndex, by: Size.count) {
            let value = try FixedBytes<Size>(Array(bytes[start..<start + Size.count]))
            if let last = values.last, !last.bytes.lexicographicallyPrecedes(value.bytes) {
                throw ProtocolError(.nonCanonical, "\(name) are not ascending without repeats")
            }
            values.append(value)
        }
        return values
    }
}
