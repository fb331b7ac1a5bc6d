import Crypto

/// A key and a nonce counter (Noise §5.1). Without a key it passes plaintext through, as the first handshake
/// messages require.
public struct CipherState: Sendable {
    private var key: SymmetricKey?
    public private(set) var nonce: UInt64 = 0

    init(key: SymmetricKey? = nil) { self.key = key }

    var hasKey: Bool { key != nil }

    /// Encrypts and authenticates `associatedData`; advances the nonce.
    mutating func encrypt(_ plaintext: [UInt8], associatedData: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        let nonceValue = try chachaNonce()
        guard let box = try? ChaChaPoly.seal(plaintext, using: key, nonce: nonceValue, authenticating: associatedData)
        else { throw NoiseError(.invalidKey, "ChaCha20-Poly1305 refused the key") }
        nonce += 1
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// Decrypts; on failure the nonce is left where it was (Noise §5.1), so a forged message cannot desynchronise
    /// the counter.
    mutating func decrypt(_ ciphertext: [UInt8], associatedData: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard ciphertext.count >= Noise.tagLength else {
            throw NoiseError(.messageTooShort, "a ciphertext is at least the \(Noise.tagLength)-byte tag")
        }
        let nonceValue = try chachaNonce()
        let split = ciphertext.count - Noise.tagLength
        guard let box = try? ChaChaPoly.SealedBox(
            nonce: nonceValue, ciphertext: ciphertext[..<split], tag: ciphertext[split...]),
            let plaintext = try? ChaChaPoly.open(box, using: key, authenticating: associatedData)
        else { throw NoiseError(.decryptionFailed, "authentication failed at nonce \(nonce)") }
        nonce += 1
        return Array(plaintext)
    }

    /// 32 zero bits followed by the little-endian counter (Noise §12.3); 2^64 − 1 is reserved.
    private func chachaNonce() throws(NoiseError) -> ChaChaPoly.Nonce {
        guard nonce < UInt64.max else { throw NoiseError(.nonceExhausted, "the nonce counter is exhausted") }
        var bytes = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: nonce.littleEndian) { bytes.replaceSubrange(4..<12, with: $0) }
        return try! ChaChaPoly.Nonce(data: bytes)
    }
}
