/// The Noise Protocol Framework (revision 34), as blepay uses it: the `XX` handshake pattern over X25519,
/// ChaCha20-Poly1305 and SHA-256 (`Noise_XX_25519_ChaChaPoly_SHA256`), built on swift-crypto's primitives.
public enum Noise {}
