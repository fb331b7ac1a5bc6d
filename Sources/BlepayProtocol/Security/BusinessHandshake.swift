import Crypto
import Noise

/// The business's side of the handshake (Noise XX initiator, §7): offers its versions, learns the customer's
/// choice, and presents its merchant certificate. One per connection.
public struct BusinessHandshake: Sendable {
    private var noise: HandshakeState
    private let certificate: MerchantCertificate
    private let versions: [UInt8]
    /// The customer's info, parsed: what it offers beyond the handshake (its L2CAP channel, §9).
    public let customerInfo: ProtocolInfo

    /// - Parameters:
    ///   - staticKey: the Noise key the certificate vouches for.
    ///   - customerInfo: the info characteristic's value, exactly as read.
    ///   - ephemeralKey: only for reproducing test vectors.
    public init(
        staticKey: Curve25519.KeyAgreement.PrivateKey, certificate: MerchantCertificate,
        versions: [UInt8] = BlepayProtocol.versions, customerInfo: [UInt8],
        ephemeralKey: Curve25519.KeyAgreement.PrivateKey = .init()
    ) throws(ProtocolError) {
        guard certificate.noiseKey.bytes == Array(staticKey.publicKey.rawRepresentation) else {
            throw ProtocolError(.invalidCertificate, "the certificate vouches for another Noise key than ours")
        }
        self.customerInfo = try ProtocolInfo(encoded: customerInfo)
        self.certificate = certificate
        self.versions = try HandshakePayload.Offer(versions: versions).versions
        noise = HandshakeState(
            role: .initiator, staticKey: staticKey, prologue: Handshake.prologue(info: customerInfo),
            ephemeralKey: ephemeralKey)
    }

    /// Handshake 1: the ephemeral key and the Offer.
    public mutating func start() throws(ProtocolError) -> Record {
        let offer = try HandshakePayload.Offer(versions: versions)
        let body = try Handshake.noise { () throws(NoiseError) in try noise.writeMessage(payload: offer.encoded) }
        return Record(kind: .handshake1, body: body)
    }

    /// Reads handshake 2 (or the customer's plaintext error) and answers with handshake 3; the session is then
    /// established on this side.
    public mutating func receive(_ record: Record) throws(ProtocolError) -> (reply: Record, session: SecureSession) {
        switch record.kind {
        case .handshake2: break
        case .plaintextError: throw try Handshake.failure(from: record)
        default: throw ProtocolError(.unexpectedMessage, "expected handshake 2, got \(record.kind)")
        }
        let payload = try Handshake.noise { () throws(NoiseError) in try noise.readMessage(record.body) }
        let choice = try HandshakePayload.Choice(encoded: payload)
        guard versions.contains(choice.version) else {
            throw ProtocolError(.unsupportedVersion, "the customer chose version \(choice.version), not offered")
        }
        let credentials = HandshakePayload.Credentials(certificate: certificate)
        let body = try Handshake.noise { () throws(NoiseError) in try noise.writeMessage(payload: credentials.encoded) }
        let transport = try Handshake.noise { () throws(NoiseError) in try noise.transport() }
        let session = SecureSession(
            role: .initiator, version: choice.version, capabilities: choice.capabilities, certificate: certificate,
            transport: transport)
        return (Record(kind: .handshake3, body: body), session)
    }
}
