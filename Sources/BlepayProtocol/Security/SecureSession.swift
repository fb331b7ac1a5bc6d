import Noise

/// An established blepay session (`docs/protocol.md` §7): the negotiated version, the merchant's checked
/// certificate, and the Noise transport that encrypts every message. Any failure it reports ends the session.
public struct SecureSession: Sendable {
    public let role: HandshakeState.Role
    public let version: UInt8
    /// The customer's capabilities, as chosen in the handshake.
    public let capabilities: Capabilities
    /// The business's certificate (checked by the customer against its trusted ledger keys).
    public let certificate: MerchantCertificate
    /// The Noise handshake hash: acceptances are bound to it, so they cannot be replayed in another session.
    public let sessionHash: Hash32
    private var transport: TransportState

    /// Longest encoded message a transport record carries.
    public static let maximumMessageSize = Framing.maximumRecordSize - 1 - Noise.tagLength

    init(
        role: HandshakeState.Role, version: UInt8, capabilities: Capabilities, certificate: MerchantCertificate,
        transport: TransportState
    ) {
        self.role = role
        self.version = version
        self.capabilities = capabilities
        self.certificate = certificate
        sessionHash = try! Hash32(transport.handshakeHash)
        self.transport = transport
    }

    /// Encrypts a message into a transport record.
    public mutating func seal(_ message: Message) throws(ProtocolError) -> Record {
        let plaintext = message.encoded
        guard plaintext.count <= Self.maximumMessageSize else {
            throw ProtocolError(.messageTooLarge, "a message is at most \(Self.maximumMessageSize) bytes")
        }
        do {
            return Record(kind: .transport, body: try transport.encrypt(plaintext))
        } catch {
            throw ProtocolError(.handshakeFailed, "the session can send no more: \(error)")
        }
    }

    /// Decrypts and decodes a transport record. A plaintext or handshake record here is `unexpected-message`.
    public mutating func open(_ record: Record) throws(ProtocolError) -> Message {
        guard record.kind == .transport else {
            throw ProtocolError(.unexpectedMessage, "a \(record.kind) record after the handshake")
        }
        let plaintext: [UInt8]
        do {
            plaintext = try transport.decrypt(record.body)
        } catch {
            throw ProtocolError(.decryptionFailed, error.description)
        }
        return try Message(encoded: plaintext)
    }

    /// The customer's check of a request before it is shown: signed by the key the certificate vouches for, and
    /// from the certificate's merchant, under the certificate's name: the name a payer sees is the one the ledger
    /// certified, never the request's own text.
    public func verify(_ request: PaymentRequest) throws(ProtocolError) {
        guard request.merchantID == certificate.merchantID else {
            throw ProtocolError(.invalidSignature, "the request names merchant \(request.merchantID), not the certificate's")
        }
        guard request.merchantName == certificate.merchantName else {
            throw ProtocolError(
                .invalidSignature, "the request calls its merchant \"\(request.merchantName)\", not the certificate's name")
        }
        guard isValidSignature(request.signature, of: request.signingBytes, by: certificate.signingKey) else {
            throw ProtocolError(.invalidSignature, "the request's signature does not verify")
        }
    }

    /// The customer's signed acceptance of `request`, bound to the request's hash and to this session.
    public func accept(
        _ request: PaymentRequest, tipMinorUnits: UInt64, instrumentID: String, delegatedInstrument: Bool,
        at now: Timestamp, preAuthorization: PreAuthorizationPresentation?, deviceKey: SigningKey
    ) throws(ProtocolError) -> PaymentAcceptance {
        try PaymentAcceptance(
            paymentID: request.paymentID, amount: request.amount, tipMinorUnits: tipMinorUnits,
            instrumentID: instrumentID, delegatedInstrument: delegatedInstrument, createdAt: now,
            requestHash: request.hash, sessionHash: sessionHash, customerKey: deviceKey.publicKey,
            preAuthorization: preAuthorization, signature: .unsigned
        ).signed(by: deviceKey)
    }

    /// The business's check of an acceptance: signed by the key it names, for exactly `request`, in this session.
    /// Amount, tip and state checks belong to the payment state machine.
    public func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest) throws(ProtocolError) {
        guard acceptance.paymentID == request.paymentID, acceptance.requestHash == request.hash else {
            throw ProtocolError(.invalidSignature, "the acceptance is for another request")
        }
        guard acceptance.sessionHash == sessionHash else {
            throw ProtocolError(.invalidSignature, "the acceptance was made in another session")
        }
        guard isValidSignature(acceptance.signature, of: acceptance.signingBytes, by: acceptance.customerKey) else {
            throw ProtocolError(.invalidSignature, "the acceptance's signature does not verify")
        }
    }
}
