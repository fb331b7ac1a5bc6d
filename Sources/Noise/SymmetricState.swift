import Crypto

/// The chaining key and handshake hash (Noise §5.2), with the cipher state they key.
struct SymmetricState: Sendable {
    private var chainingKey: [UInt8]
    private(set) var handshakeHash: [UInt8]
    private var cipher = CipherState()

    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        handshakeHash = name.count <= Noise.keyLength
            ? name + [UInt8](repeating: 0, count: Noise.keyLength - name.count)
            : Array(SHA256.hash(data: name))
        chainingKey = handshakeHash
    }

    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let (ck, key) = hkdf(inputKeyMaterial)
        chainingKey = ck
        cipher = CipherState(key: SymmetricKey(data: key))
    }

    mutating func mixHash(_ data: [UInt8]) {
        var hasher = SHA256()
        hasher.update(data: handshakeHash)
        hasher.update(data: data)
        handshakeHash = Array(hasher.finalize())
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(plaintext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ciphertext, associatedData: handshakeHash)
        mixHash(ciphertext)
        return plaintext
    }

    /// The two transport keys: the initiator sends with the first.
    func split() -> (CipherState, CipherState) {
        let (first, second) = hkdf([])
        return (CipherState(key: SymmetricKey(data: first)), CipherState(key: SymmetricKey(data: second)))
    }

    var hasKey: Bool { cipher.hasKey }

    /// Noise's HKDF with two outputs is RFC 5869 HKDF-SHA256 with the chaining key as salt, empty info and 64
    /// bytes of output.
    private func hkdf(_ inputKeyMaterial: [UInt8]) -> ([UInt8], [UInt8]) {
        let output = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: inputKeyMaterial), salt: chainingKey, info: [UInt8](),
            outputByteCount: 2 * Noise.keyLength
        ).withUnsafeBytes { Array($0) }
        return (Array(output[..<Noise.keyLength]), Array(output[Noise.keyLength...]))
    }
}
