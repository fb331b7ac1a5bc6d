import Crypto
import Noise

/// The customer's side of the handshake (Noise XX responder, §7): picks the highest common version, then checks
/// the merchant certificate before the session may carry any request. One per connection.
public struct CustomerHandshake: Sendable {
    public enum Step: Sendable {
        /// Send this record and wait for the next.
        case reply(Record)
        /// The handshake is complete and the merchant authenticated.
        case established(SecureSession)
    }

    private var noise: HandshakeState
    private let info: ProtocolInfo
    private let ledgerKeys: TrustedLedgerKeys
    private var version: UInt8?

    /// - Parameters:
    ///   - staticKey: the customer's Noise key, rotated with its advertising identifier.
    ///   - info: what its info characteristic serves.
    ///   - ephemeralKey: only for reproducing test vectors.
    public init(
        staticKey: Curve25519.KeyAgreement.PrivateKey, info: ProtocolInfo, trusting ledgerKeys: TrustedLedgerKeys,
        ephemeralKey: Curve25519.KeyAgreement.PrivateKey = .init()
    ) {
        self.info = info
        self.ledgerKeys = ledgerKeys
        noise = HandshakeState(
            role: .responder, staticKey: staticKey, prologue: Handshake.prologue(info: info.encoded),
            ephemeralKey: ephemeralKey)
    }

    /// Handles handshake 1 or 3. A thrown error ends the connection: send `failureRecord(for:)` first.
    public mutating func receive(_ record: Record, at now: Timestamp) throws(ProtocolError) -> Step {
        switch (record.kind, version) {
        case (.handshake1, nil): return .reply(try answer(record))
        case (.handshake3, let version?): return .established(try authenticate(record, version: version, at: now))
        case (.plaintextError, _): throw try Handshake.failure(from: record)
        default: throw ProtocolError(.unexpectedMessage, "a \(record.kind) record at this point of the handshake")
        }
    }

    /// The plaintext Error record to send before disconnecting when `receive` failed; a version mismatch names
    /// the customer's versions so that the business can say what it would need.
    public func failureRecord(for error: ProtocolError) -> Record {
        let detail = error.code == .unsupportedVersion ? "customer speaks versions \(info.versions)" : nil
        return Record.plaintextError(for: error, detail: detail)
    }

    private mutating func answer(_ record: Record) throws(ProtocolError) -> Record {
        let payload = try Handshake.noise { () throws(NoiseError) in try noise.readMessage(record.body) }
        let offer = try HandshakePayload.Offer(encoded: payload)
        guard let chosen = info.versions.filter(offer.versions.contains).max() else {
            throw ProtocolError(.unsupportedVersion, "offered \(offer.versions), the customer speaks \(info.versions)")
        }
        let choice = HandshakePayload.Choice(version: chosen, capabilities: info.capabilities)
        let body = try Handshake.noise { () throws(NoiseError) in try noise.writeMessage(payload: choice.encoded) }
        version = chosen
        return Record(kind: .handshake2, body: body)
    }

    private mutating func authenticate(_ record: Record, version: UInt8, at now: Timestamp)
        throws(ProtocolError) -> SecureSession
    {
        let payload = try Handshake.noise { () throws(NoiseError) in try noise.readMessage(record.body) }
        let certificate = try HandshakePayload.Credentials(encoded: payload).certificate
        let transport = try Handshake.noise { () throws(NoiseError) in try noise.transport() }
        try certificate.verify(trusting: ledgerKeys, at: now, noiseKey: transport.remoteStaticKey)
        return SecureSession(
            role: .responder, version: version, capabilities: info.capabilities, certificate: certificate,
            transport: transport)
    }
}
