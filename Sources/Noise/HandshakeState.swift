import Crypto

/// The `XX` handshake (Noise §7.5): three messages, after which both sides know each other's static key and share
/// transport keys.
///
///     -> e
///     <- e, ee, s, es
///     -> s, se
///
/// A value type: a message that fails to write or read leaves the state as it was, but a failed handshake must be
/// abandoned, not retried.
public struct HandshakeState: Sendable {
    public enum Role: Sendable, Hashable {
        case initiator
        case responder
    }

    private enum Token { case e, s, ee, es, se }
    private static let pattern: [[Token]] = [[.e], [.e, .ee, .s, .es], [.s, .se]]

    public let role: Role
    private var symmetric: SymmetricState
    private let staticKey: Curve25519.KeyAgreement.PrivateKey
    private var ephemeralKey: Curve25519.KeyAgreement.PrivateKey
    private var remoteEphemeralKey: Curve25519.KeyAgreement.PublicKey?
    private var remoteStatic: Curve25519.KeyAgreement.PublicKey?
    private var messageIndex = 0

    /// - Parameter ephemeralKey: only for reproducing test vectors; by default a fresh key for this handshake.
    public init(
        role: Role, staticKey: Curve25519.KeyAgreement.PrivateKey, prologue: [UInt8],
        ephemeralKey: Curve25519.KeyAgreement.PrivateKey = .init()
    ) {
        self.role = role
        self.staticKey = staticKey
        self.ephemeralKey = ephemeralKey
        symmetric = SymmetricState(protocolName: Noise.protocolName)
        symmetric.mixHash(prologue)
    }

    public var isComplete: Bool { messageIndex == Self.pattern.count }

    /// Whether the next message is ours to write.
    public var isOurTurn: Bool { !isComplete && (messageIndex % 2 == 0) == (role == .initiator) }

    /// The peer's static public key, once its `s` token has been read.
    public var remoteStaticKey: [UInt8]? { remoteStatic.map { Array($0.rawRepresentation) } }

    /// The handshake hash `h`: after the handshake, a unique identifier of this session that both sides share.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    public mutating func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard isOurTurn else { throw NoiseError(.outOfTurn, "not ours to write: message \(messageIndex + 1)") }
        var next = self
        var message: [UInt8] = []
        for token in Self.pattern[messageIndex] {
            switch token {
            case .e:
                let publicKey = Array(next.ephemeralKey.publicKey.rawRepresentation)
                message += publicKey
                next.symmetric.mixHash(publicKey)
            case .s:
                message += try next.symmetric.encryptAndHash(Array(staticKey.publicKey.rawRepresentation))
            case .ee, .es, .se:
                try next.mixDH(token)
            }
        }
        message += try next.symmetric.encryptAndHash(payload)
        guard message.count <= Noise.maximumMessageLength else {
            throw NoiseError(.messageTooLong, "handshake message of \(message.count) bytes")
        }
        next.messageIndex += 1
        self = next
        return message
    }

    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isComplete, !isOurTurn else {
            throw NoiseError(.outOfTurn, "not ours to read: message \(messageIndex + 1)")
        }
        guard message.count <= Noise.maximumMessageLength else {
            throw NoiseError(.messageTooLong, "handshake message of \(message.count) bytes")
        }
        var next = self
        var rest = message[...]
        for token in Self.pattern[messageIndex] {
            switch token {
            case .e:
                let bytes = try Self.take(Noise.keyLength, from: &rest)
                next.remoteEphemeralKey = try Self.publicKey(bytes)
                next.symmetric.mixHash(bytes)
            case .s:
                let length = Noise.keyLength + (next.symmetric.hasKey ? Noise.tagLength : 0)
                let bytes = try next.symmetric.decryptAndHash(try Self.take(length, from: &rest))
                next.remoteStatic = try Self.publicKey(bytes)
            case .ee, .es, .se:
                try next.mixDH(token)
            }
        }
        let payload = try next.symmetric.decryptAndHash(Array(rest))
        next.messageIndex += 1
        self = next
        return payload
    }

    /// The transport cipher states, once the third message has been written or read.
    public func transport() throws(NoiseError) -> TransportState {
        guard isComplete, let remoteStatic else { throw NoiseError(.outOfTurn, "the handshake is not complete") }
        let (first, second) = symmetric.split()
        return TransportState(
            sending: role == .initiator ? first : second, receiving: role == .initiator ? second : first,
            handshakeHash: symmetric.handshakeHash, remoteStaticKey: Array(remoteStatic.rawRepresentation))
    }

    /// `ee`, `es`, `se`: the first letter is the initiator's key, the second the responder's.
    private mutating func mixDH(_ token: Token) throws(NoiseError) {
        let initiatorSide = role == .initiator
        let (local, remote): (Curve25519.KeyAgreement.PrivateKey, Curve25519.KeyAgreement.PublicKey?) =
            switch token {
            case .ee: (ephemeralKey, remoteEphemeralKey)
            case .es: initiatorSide ? (ephemeralKey, remoteStatic) : (staticKey, remoteEphemeralKey)
            case .se: initiatorSide ? (staticKey, remoteEphemeralKey) : (ephemeralKey, remoteStatic)
            case .e, .s: preconditionFailure("not a DH token")
            }
        // An all-zero output means a low-order point (RFC 7748 §6.1): a peer forcing a known secret, refused.
        guard let remote, let secret = try? local.sharedSecretFromKeyAgreement(with: remote),
            case let bytes = secret.withUnsafeBytes({ Array($0) }), bytes.contains(where: { $0 != 0 })
        else { throw NoiseError(.invalidKey, "the peer's key gives no valid X25519 shared secret") }
        symmetric.mixKey(bytes)
    }

    private static func take(_ count: Int, from rest: inout ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard rest.count >= count else {
            throw NoiseError(.messageTooShort, "expected \(count) more bytes, found \(rest.count)")
        }
        defer { rest = rest.dropFirst(count) }
        return Array(rest.prefix(count))
    }

    private static func publicKey(_ bytes: [UInt8]) throws(NoiseError) -> Curve25519.KeyAgreement.PublicKey {
        guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes) else {
            throw NoiseError(.invalidKey, "not an X25519 public key")
        }
        return key
    }
}
