import Crypto

/// An Ed25519 key pair that signs protocol structures: the ledger's (certificates, vouchers, receipts), a merchant's
/// (payment requests) or a customer device's (acceptances).
public struct SigningKey: Sendable {
    let key: Curve25519.Signing.PrivateKey

    public init() { key = Curve25519.Signing.PrivateKey() }

    /// A key from its 32-byte seed (as stored in a key file).
    public init(seed: [UInt8]) throws(ProtocolError) {
        do { key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed) } catch {
            throw ProtocolError(.invalidLength, "an Ed25519 seed is 32 bytes")
        }
    }

    /// The seed, for storing the key; never log it.
    public var seed: [UInt8] { Array(key.rawRepresentation) }
    public var publicKey: Key32 { try! Key32(Array(key.publicKey.rawRepresentation)) }

    public func sign(_ bytes: [UInt8]) throws(ProtocolError) -> Signature64 {
        do { return try Signature64(Array(key.signature(for: bytes))) } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.invalidSignature, "signing failed: \(error)")
        }
    }
}

/// Ed25519 verification of a signature over `bytes` by the public key `key`.
public func isValidSignature(_ signature: Signature64, of bytes: [UInt8], by key: Key32) -> Bool {
    guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key.bytes) else { return false }
    return publicKey.isValidSignature(signature.bytes, for: bytes)
}

/// The ledger public keys a customer or business trusts, found by key id (first 8 bytes of the key's SHA-256), so
/// that the ledger can rotate keys while older certificates stay valid.
public struct TrustedLedgerKeys: Sendable {
    let keys: [FixedBytes<Bytes8>: Key32]

    public init(_ keys: [Key32]) {
        self.keys = Dictionary(keys.map { (Self.keyID(of: $0), $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func key(id: FixedBytes<Bytes8>) -> Key32? { keys[id] }

    public static func keyID(of key: Key32) -> FixedBytes<Bytes8> {
        try! FixedBytes<Bytes8>(Array(SHA256.hash(data: key.bytes).prefix(8)))
    }
}

/// Ed25519 signatures checked ahead of time, so that work done under a lock (the ledger's write transaction) need
/// not repeat them: the very signature over the very bytes by the very key that was checked is valid without a
/// second verification; anything else is verified when asked. It only saves work, never changes an answer.
public struct CheckedSignatures: Sendable {
    private struct Check: Hashable, Sendable {
        let signature: Signature64
        let bytes: [UInt8]
        let key: Key32
    }

    private var valid: Set<Check> = []

    public init() {}

    /// Verifies `signature` now, and remembers it if valid.
    public mutating func check(_ signature: Signature64, of bytes: [UInt8], by key: Key32) {
        if isValidSignature(signature, of: bytes, by: key) { valid.insert(Check(signature: signature, bytes: bytes, key: key)) }
    }

    /// Whether `signature` is `key`'s over `bytes`: at once if it was checked before, else by verifying it.
    public func isValid(_ signature: Signature64, of bytes: [UInt8], by key: Key32) -> Bool {
        valid.contains(Check(signature: signature, bytes: bytes, key: key)) || isValidSignature(signature, of: bytes, by: key)
    }
}
