/// An application message, sent encrypted once the handshake is complete.
public enum Message: Sendable, Hashable {
    /// Business → customer.
    case paymentRequest(PaymentRequest)
    /// Customer → business.
    case paymentAcceptance(PaymentAcceptance)
    /// Either direction.
    case cancelPayment(CancelPayment)
    /// Business → customer, or customer → business when the customer executed the payment (business offline).
    case paymentResult(PaymentResult)
    /// Business → customer.
    case otherPaid(OtherPaid)
    /// Either direction.
    case error(ErrorMessage)
    /// Business → customer: execute this acceptance of an offline request.
    case goAhead(GoAhead)
    /// Customer → business, over a new connection: the result of a payment whose answer the last one lost.
    case resultQuery(ResultQuery)
}

/// Protocol versions and capabilities: what a customer advertises and what its info characteristic tells.
public struct Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The customer can reach the ledger now.
    public static let online = Capabilities(rawValue: 1 << 0)
    /// The customer holds an unexpired pre-authorization for offline payments.
    public static let preAuthorization = Capabilities(rawValue: 1 << 1)
}

/// The content of the customer's read-only info characteristic.
public struct ProtocolInfo: Sendable, Hashable {
    /// Protocol versions the customer speaks, highest first.
    public let versions: [UInt8]
    public let capabilities: Capabilities
    /// The largest message (before encryption) the customer accepts.
    public let maximumMessageSize: UInt16
    /// The LE PSM on which the customer accepts an L2CAP channel for the session (§9); nil when it takes none.
    public let channelPSM: UInt16?

    /// LE PSMs (Core 5.3 Vol 3 Part A §4.22): 0x0001–0x007F assigned, 0x0080–0x00FF dynamic.
    public static let channelPSMs: ClosedRange<UInt16> = 0x0001...0x00FF

    public init(versions: [UInt8], capabilities: Capabilities, maximumMessageSize: UInt16, channelPSM: UInt16? = nil)
        throws(ProtocolError)
    {
        guard (1...16).contains(versions.count), !versions.contains(0) else {
            throw ProtocolError(.invalidValue, "1 to 16 protocol versions, none 0")
        }
        if let channelPSM, !Self.channelPSMs.contains(channelPSM) {
            throw ProtocolError(.invalidValue, "channel PSM \(channelPSM) is not an LE PSM (1 to 255)")
        }
        self.versions = versions
        self.capabilities = capabilities
        self.maximumMessageSize = maximumMessageSize
        self.channelPSM = channelPSM
    }
}

/// Service data in the customer's advertisement: no identity, only what a business needs to pick a customer.
public struct AdvertisementData: Sendable, Hashable {
    /// Highest protocol version the customer speaks.
    public let version: UInt8
    public let capabilities: Capabilities
    /// Random, replaced at least every 15 minutes; lets a business tell nearby customers apart, never who they are.
    public let ephemeralID: FixedBytes<Bytes8>

    public init(version: UInt8, capabilities: Capabilities, ephemeralID: FixedBytes<Bytes8>) {
        self.version = version
        self.capabilities = capabilities
        self.ephemeralID = ephemeralID
    }
}

/// The payloads the Noise XX handshake carries (see `docs/protocol.md`, Session).
public enum HandshakePayload {
    /// In the first message (business → customer, unencrypted): the versions the business speaks.
    public struct Offer: Sendable, Hashable {
        public let versions: [UInt8]
        public init(versions: [UInt8]) throws(ProtocolError) {
            guard (1...16).contains(versions.count), !versions.contains(0) else {
                throw ProtocolError(.invalidValue, "1 to 16 protocol versions, none 0")
            }
            self.versions = versions
        }
    }

    /// In the second (customer → business, encrypted): the version chosen and the customer's capabilities.
    public struct Choice: Sendable, Hashable {
        public let version: UInt8
        public let capabilities: Capabilities
        public init(version: UInt8, capabilities: Capabilities) {
            self.version = version
            self.capabilities = capabilities
        }
    }

    /// In the third (business → customer, encrypted): the certificate vouching for the business's static key.
    public struct Credentials: Sendable, Hashable {
        public let certificate: MerchantCertificate
        public init(certificate: MerchantCertificate) { self.certificate = certificate }
    }
}
