// Field tables of the payment messages; `docs/protocol.md` lists the same tags. Tag 100 is always the signature,
// so it comes last and the signing bytes are the fields before it.

extension PaymentRequest: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        w.money(2, amount)  // 2 amount, 3 currency
        w.string(4, reference)
        w.string(5, merchantID)
        w.string(6, merchantName)
        w.uint(7, createdAt.millisecondsSince1970)
        w.uint(8, expiresAt.millisecondsSince1970)
        w.bool(9, businessOnline)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            paymentID: r.paymentID(1), amount: r.money(2, "amount"),
            reference: r.optionalString(4, "reference", limit: Self.referenceLimit),
            merchantID: r.string(5, "merchant id", limit: 64),
            merchantName: r.string(6, "merchant name", limit: Self.merchantNameLimit),
            createdAt: r.timestamp(7, "created at"), expiresAt: r.timestamp(8, "expires at"),
            businessOnline: r.bool(9, "business online"), signature: r.fixed(100, "signature"))
    }
}

extension PaymentAcceptance: FieldCodable {
    static let isSigned = true

    func encodeUnsignedFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        w.money(2, amount)  // 2 amount, 3 currency
        w.uint(4, tipMinorUnits)
        w.string(5, instrumentID)
        w.bool(6, delegatedInstrument)
        w.uint(7, createdAt.millisecondsSince1970)
        w.bytes(8, requestHash.bytes)
        w.bytes(9, sessionHash.bytes)
        w.bytes(10, customerKey.bytes)
        w.nested(11, preAuthorization)
    }

    func encodeFields(into w: inout FieldWriter) {
        encodeUnsignedFields(into: &w)
        w.bytes(100, signature.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        try self.init(
            paymentID: r.paymentID(1), amount: r.money(2, "amount"), tipMinorUnits: r.uint(4, "tip"),
            instrumentID: r.string(5, "instrument id", limit: Self.instrumentIDLimit),
            delegatedInstrument: r.bool(6, "delegated instrument"), createdAt: r.timestamp(7, "created at"),
            requestHash: r.fixed(8, "request hash"), sessionHash: r.fixed(9, "session hash"),
            customerKey: r.fixed(10, "customer key"), preAuthorization: r.optionalNested(11),
            signature: r.fixed(100, "signature"))
    }
}

extension CancelPayment: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        w.uint(2, UInt64(reason.rawValue))
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        self.init(paymentID: try r.paymentID(1), reason: try r.errorCode(2, "reason"))
    }
}

extension PaymentResult: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        switch outcome {
        case .finished(let receipt):
            w.nested(2, receipt)
        case .failed(let code, let detail):
            w.uint(3, UInt64(code.rawValue))
            w.string(4, detail)
        }
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        let paymentID = try r.paymentID(1)
        let receipt: Receipt? = try r.optionalNested(2)
        let code = try r.optionalUInt(3)
        let detail = try r.optionalString(4, "detail", limit: Self.detailLimit)
        switch (receipt, code) {
        case (let receipt?, nil) where detail == nil:
            try self.init(paymentID: paymentID, outcome: .finished(receipt))
        case (nil, let code?):
            try self.init(paymentID: paymentID, outcome: .failed(PaymentErrorCode(wire: code), detail: detail))
        default:
            throw ProtocolError(.invalidValue, "a result has either a receipt or an error code")
        }
    }
}

extension OtherPaid: FieldCodable {
    static let isSigned = false
    func encodeFields(into w: inout FieldWriter) { w.bytes(1, paymentID.bytes) }
    init(fields r: inout FieldReader) throws(ProtocolError) { self.init(paymentID: try r.paymentID(1)) }
}

extension AcceptanceReference: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.bytes(1, paymentID.bytes)
        w.bytes(2, acceptanceHash.bytes)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        self.init(paymentID: try r.paymentID(1), acceptanceHash: try r.fixed(2, "acceptance hash"))
    }
}

extension ErrorMessage: FieldCodable {
    static let isSigned = false

    func encodeFields(into w: inout FieldWriter) {
        w.uint(1, UInt64(code.rawValue))
        w.bytes(2, paymentID?.bytes)
        w.string(3, detail)
    }

    init(fields r: inout FieldReader) throws(ProtocolError) {
        let paymentID = try r.optionalBytes(2).map { (bytes) throws(ProtocolError) in try PaymentID(bytes: Array(bytes)) }
        try self.init(
            code: r.errorCode(1, "code"), paymentID: paymentID,
            detail: r.optionalString(3, "detail", limit: PaymentResult.detailLimit))
    }
}

extension PaymentErrorCode {
    init(wire: UInt64) throws(ProtocolError) {
        guard let raw = UInt16(exactly: wire), let code = PaymentErrorCode(rawValue: raw) else {
            throw ProtocolError(.invalidValue, "\(wire) is not a blepay error code")
        }
        self = code
    }
}

extension FieldReader {
    mutating func errorCode(_ tag: UInt8, _ name: String) throws(ProtocolError) -> PaymentErrorCode {
        try PaymentErrorCode(wire: uint(tag, name))
    }
}
