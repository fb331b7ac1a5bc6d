import BlepayProtocol
import Crypto

/// How a device authenticates each request to the ledger: HMAC-SHA256, with a secret per device, over the method,
/// path, timestamp, nonce, idempotency key and the SHA-256 of the body. The key is covered so that nobody on the
/// way can make one intended request count twice by sending it again under another key. The ledger accepts a
/// timestamp within ±300 s of its clock and each nonce once in that window; comparisons are constant-time
/// (swift-crypto's `isValidAuthenticationCode`).
public enum RequestAuthentication {
    /// Header names, as the client sends them.
    public static let deviceHeader = "Blepay-Device"
    public static let timestampHeader = "Blepay-Timestamp"
    public static let nonceHeader = "Blepay-Nonce"
    public static let signatureHeader = "Blepay-Signature"
    public static let window: Int64 = 300

    public struct Failure: Error, Sendable, Hashable {
        public enum Code: String, Sendable, Hashable {
            case missingHeader = "auth.missing-header"
            case staleTimestamp = "auth.stale-timestamp"
            case reusedNonce = "auth.reused-nonce"
            case badSignature = "auth.bad-signature"
        }

        public let code: Code
        public init(_ code: Code) { self.code = code }
    }

    /// The bytes that are MACed: one field per line (an absent idempotency key as an empty one), the body by its
    /// hash, so the MAC never needs the body twice.
    public static func canonical(
        method: String, path: String, timestamp: Int64, nonce: String, idempotencyKey: String?, body: [UInt8]
    ) -> [UInt8] {
        let bodyHash = SHA256.hash(data: body).hex
        let lines = ["blepay-ledger/2", method.uppercased(), path, "\(timestamp)", nonce, idempotencyKey ?? "", bodyHash]
        return Array(lines.joined(separator: "\n").utf8)
    }

    /// The signature header's value: the MAC in lowercase hex.
    public static func sign(method: String, path: String, timestamp: Int64, nonce: String, idempotencyKey: String?,
        body: [UInt8], secret: SymmetricKey) -> String
    {
        let data = canonical(
            method: method, path: path, timestamp: timestamp, nonce: nonce, idempotencyKey: idempotencyKey, body: body)
        return HMAC<SHA256>.authenticationCode(for: data, using: secret).hex
    }

    /// Checks a request's MAC and freshness and returns its nonce, which the caller then spends: a device's nonce
    /// is accepted once within `2 × window` (older requests are stale anyway), and a second use is `.reusedNonce`.
    /// Only a valid request gets this far, so a forger cannot burn someone else's nonces.
    public static func verify(
        method: String, path: String, timestamp: Int64?, nonce: String?, idempotencyKey: String?, signature: String?,
        body: [UInt8], secret: SymmetricKey, now: Int64
    ) throws(Failure) -> String {
        guard let timestamp, let nonce, !nonce.isEmpty, nonce.utf8.count <= 64, let signature,
            let mac = Hex.decode(signature, limit: SHA256.byteCount)
        else { throw Failure(.missingHeader) }
        let (age, overflow) = now.subtractingReportingOverflow(timestamp)
        guard !overflow, age.magnitude <= window else { throw Failure(.staleTimestamp) }
        let data = canonical(
            method: method, path: path, timestamp: timestamp, nonce: nonce, idempotencyKey: idempotencyKey, body: body)
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: data, using: secret) else {
            throw Failure(.badSignature)
        }
        return nonce
    }
}
