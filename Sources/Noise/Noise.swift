/// The Noise Protocol Framework (revision 34), as blepay uses it: the `XX` handshake pattern over X25519,
/// ChaCha20-Poly1305 and SHA-256 (`Noise_XX_25519_ChaChaPoly_SHA256`), built on swift-crypto's primitives.
///
/// `HandshakeState` runs the three handshake messages and yields a `TransportState`: one `CipherState` per
/// direction, with the implicit nonce counters that make a replayed, reordered or altered message fail.
public enum Noise {
    public static let protocolName = "Noise_XX_25519_ChaChaPoly_SHA256"
    /// Length of a public key, a DH output and a hash.
    public static let keyLength = 32
    /// Length of the Poly1305 tag every encrypted payload carries.
    public static let tagLength = 16
    /// Longest Noise message, handshake or transport.
    public static let maximumMessageLength = 65535
}
