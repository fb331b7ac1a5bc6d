/// blepay's binary encoding of messages and structures (`docs/protocol.md`, Encoding). Encoding is canonical:
/// decoding accepts only the one encoding `encoded` produces, so signatures can be checked over re-encoded bytes.
public protocol WireCodable: Sendable, Hashable {
    var encoded: [UInt8] { get }
    init(encoded: [UInt8]) throws(ProtocolError)
}

/// Structures signed by a key: the bytes the signature covers.
public protocol WireSigned: WireCodable {
    /// ASCII domain-separation context, so a signature over one kind of structure never verifies as another.
    static var signingContext: String { get }
    var signingBytes: [UInt8] { get }
}

extension FieldCodable {
    var fieldBytes: [UInt8] {
        var writer = FieldWriter()
        encodeFields(into: &writer)
        return writer.bytes
    }

    init(fieldBytes bytes: ArraySlice<UInt8>) throws(ProtocolError) {
        var reader = try FieldReader(bytes)
        self = try Self(fields: &reader)
        try reader.finish(signed: Self.isSigned)
    }
}

extension PaymentRequest: WireSigned {
    public static let signingContext = "blepay/1 payment-request\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension PaymentAcceptance: WireSigned {
    public static let signingContext = "blepay/1 payment-acceptance\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension Receipt: WireSigned {
    public static let signingContext = "blepay/1 receipt\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension RefundReceipt: WireSigned {
    public static let signingContext = "blepay/1 refund-receipt\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension MerchantCertificate: WireSigned {
    public static let signingContext = "blepay/1 merchant-certificate\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension PreAuthorizationVoucher: WireSigned {
    public static let signingContext = "blepay/1 pre-authorization\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension DenyList: WireSigned {
    public static let signingContext = "blepay/1 deny-list\0"
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
    public var signingBytes: [UInt8] { signing(Self.signingContext, encodeUnsignedFields) }
}

extension ProtocolInfo: WireCodable {
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
}

extension HandshakePayload.Offer: WireCodable {
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
}

extension HandshakePayload.Choice: WireCodable {
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
}

extension HandshakePayload.Credentials: WireCodable {
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
}

extension ErrorMessage: WireCodable {
    public var encoded: [UInt8] { fieldBytes }
    public init(encoded: [UInt8]) throws(ProtocolError) { try self.init(fieldBytes: encoded[...]) }
}

private func signing(_ context: String, _ encode: (inout FieldWriter) -> Void) -> [UInt8] {
    var writer = FieldWriter()
    encode(&writer)
    return Array(context.utf8) + writer.bytes
}

extension Message: WireCodable {
    /// Message type bytes; never reused.
    enum Kind: UInt8 {
        case paymentRequest = 1, paymentAcceptance, cancelPayment, paymentResult, otherPaid, error, goAhead, resultQuery
    }

    public var encoded: [UInt8] {
        switch self {
        case .paymentRequest(let m): [Kind.paymentRequest.rawValue] + m.fieldBytes
        case .paymentAcceptance(let m): [Kind.paymentAcceptance.rawValue] + m.fieldBytes
        case .cancelPayment(let m): [Kind.cancelPayment.rawValue] + m.fieldBytes
        case .paymentResult(let m): [Kind.paymentResult.rawValue] + m.fieldBytes
        case .otherPaid(let m): [Kind.otherPaid.rawValue] + m.fieldBytes
        case .error(let m): [Kind.error.rawValue] + m.fieldBytes
        case .goAhead(let m): [Kind.goAhead.rawValue] + m.fieldBytes
        case .resultQuery(let m): [Kind.resultQuery.rawValue] + m.fieldBytes
        }
    }

    public init(encoded bytes: [UInt8]) throws(ProtocolError) {
        guard let first = bytes.first else { throw ProtocolError(.truncated, "an empty message") }
        guard bytes.count <= Framing.maximumRecordSize else {
            throw ProtocolError(.messageTooLarge, "\(bytes.count) bytes; at most \(Framing.maximumRecordSize)")
        }
        let body = bytes[1...]
        switch Kind(rawValue: first) {
        case .paymentRequest: self = .paymentRequest(try PaymentRequest(fieldBytes: body))
        case .paymentAcceptance: self = .paymentAcceptance(try PaymentAcceptance(fieldBytes: body))
        case .cancelPayment: self = .cancelPayment(try CancelPayment(fieldBytes: body))
        case .paymentResult: self = .paymentResult(try PaymentResult(fieldBytes: body))
        case .otherPaid: self = .otherPaid(try OtherPaid(fieldBytes: body))
        case .error: self = .error(try ErrorMessage(fieldBytes: body))
        case .goAhead: self = .goAhead(try GoAhead(fieldBytes: body))
        case .resultQuery: self = .resultQuery(try ResultQuery(fieldBytes: body))
        case nil: throw ProtocolError(.unknownMessageType, "message type \(first)")
        }
    }
}

extension AdvertisementData {
    /// The 10 bytes of service data: version, capabilities, ephemeral id.
    public var encoded: [UInt8] { [version, capabilities.rawValue] + ephemeralID.bytes }

    public init(encoded bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count == 10 else { throw ProtocolError(.invalidLength, "advertised service data is 10 bytes") }
        guard bytes[0] != 0 else { throw ProtocolError(.invalidValue, "protocol version 0") }
        self.init(
            version: bytes[0], capabilities: Capabilities(rawValue: bytes[1]),
            ephemeralID: try FixedBytes<Bytes8>(Array(bytes[2...])))
    }
}
