/// The session after the handshake: one cipher state per direction. Each side's nonce counts its messages, so a
/// replayed, dropped, reordered or altered message fails to decrypt.
public struct TransportState: Sendable {
    private var sending: CipherState
    private var receiving: CipherState
    /// Identifies the session; blepay binds acceptances to it.
    public let handshakeHash: [UInt8]
    public let remoteStaticKey: [UInt8]

    init(sending: CipherState, receiving: CipherState, handshakeHash: [UInt8], remoteStaticKey: [UInt8]) {
        self.sending = sending
        self.receiving = receiving
        self.handshakeHash = handshakeHash
        self.remoteStaticKey = remoteStaticKey
    }

    /// Longest plaintext that fits one Noise message.
    public static let maximumPlaintextLength = Noise.maximumMessageLength - Noise.tagLength

    public var sendingNonce: UInt64 { sending.nonce }
    public var receivingNonce: UInt64 { receiving.nonce }

    public mutating func encrypt(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard plaintext.count <= Self.maximumPlaintextLength else {
            throw NoiseError(.messageTooLong, "plaintext of \(plaintext.count) bytes")
        }
        return try sending.encrypt(plaintext, associatedData: [])
    }

    public mutating func decrypt(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard ciphertext.count <= Noise.maximumMessageLength else {
            throw NoiseError(.messageTooLong, "message of \(ciphertext.count) bytes")
        }
        return try receiving.decrypt(ciphertext, associatedData: [])
    }
}
