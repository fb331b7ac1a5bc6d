/// A Noise failure with a stable code. A handshake that fails must be abandoned; a transport message that fails to
/// decrypt leaves the receiving nonce unchanged, but blepay ends the session on any failure.
public struct NoiseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A public key that is not 32 bytes, or a DH with a low-order point.
        case invalidKey = "noise.invalid-key"
        /// A message shorter than its pattern's keys and tag.
        case messageTooShort = "noise.message-too-short"
        /// A message (or a payload that would make one) longer than 65535 bytes.
        case messageTooLong = "noise.message-too-long"
        /// Authentication of a ciphertext failed: wrong key, altered bytes, or a replayed or reordered message.
        case decryptionFailed = "noise.decryption-failed"
        /// The nonce counter reached its end (2^64 − 1): the session must end.
        case nonceExhausted = "noise.nonce-exhausted"
        /// Writing when it is the peer's turn, reading when it is ours, or a message after the handshake ended.
        case outOfTurn = "noise.out-of-turn"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
