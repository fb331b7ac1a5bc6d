import BlepayProtocol
import Crypto

/// The `Idempotency-Key` rule for every POST: the first request with a key is carried out and its response kept;
/// the same key with the same parameters gets that response again; with other parameters, a conflict. A value type
/// over what storage keeps (key → parameters' fingerprint and response).
///
/// The fingerprint is an HMAC under a key only the ledger holds: a plain hash of a body that carries a card number
/// and CVC lets whoever copies the database test guesses of them, and finds them in seconds.
public struct IdempotencyRecord: Sendable, Hashable, Codable {
    public let key: String
    /// `hmac-sha256:` and the HMAC of the method, path and body, hex; a record kept before fingerprints were keyed
    /// holds the plain SHA-256, hex.
    public let parametersHash: String
    public let status: Int
    public let response: [UInt8]

    public init(key: String, parametersHash: String, status: Int, response: [UInt8]) {
        self.key = key
        self.parametersHash = parametersHash
        self.status = status
        self.response = response
    }

    public static let maximumKeyLength = 255

    public enum Decision: Sendable, Hashable {
        /// Not seen: carry the request out and store its record.
        case execute
        /// Seen with the same parameters: answer with this.
        case replay(status: Int, response: [UInt8])
        /// Seen with other parameters (HTTP 409).
        case conflict
    }

    public enum KeyError: Error, Sendable, Hashable {
        case missing, tooLong, invalidCharacters
    }

    /// A key is 1 to 255 printable ASCII characters (Stripe's limit).
    public static func validate(_ key: String?) throws(KeyError) -> String {
        guard let key, !key.isEmpty else { throw KeyError.missing }
        guard key.utf8.count <= maximumKeyLength else { throw KeyError.tooLong }
        guard key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { throw KeyError.invalidCharacters }
        return key
    }

    static let keyedPrefix = "hmac-sha256:"

    /// The fingerprint of a request's parameters under the ledger's `key`.
    public static func parametersHash(method: String, path: String, body: [UInt8], key: SymmetricKey) -> String {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("\(method.uppercased()) \(path)\n".utf8))
        mac.update(data: body)
        return keyedPrefix + mac.finalize().hex
    }

    /// The fingerprint records made before fingerprints were keyed hold; they age out with their records.
    static func unkeyedHash(method: String, path: String, body: [UInt8]) -> String {
        var hasher = SHA256()
        hasher.update(data: Array("\(method.uppercased()) \(path)\n".utf8))
        hasher.update(data: body)
        return hasher.finalize().hex
    }

    /// What to do with a request given the record stored under its key, if any; `parametersHash` is the request's
    /// keyed fingerprint. A record from before keyed fingerprints is compared with the plain hash of the method,
    /// path and body, computed only then.
    public static func decide(
        stored: IdempotencyRecord?, parametersHash: String, method: String, path: String, body: [UInt8]
    ) -> Decision {
        guard let stored else { return .execute }
        let same = stored.parametersHash.hasPrefix(keyedPrefix)
            ? stored.parametersHash == parametersHash
            : stored.parametersHash == unkeyedHash(method: method, path: path, body: body)
        return same ? .replay(status: stored.status, response: stored.response) : .conflict
    }

    /// The fingerprint key a ledger derives from its signing key: the same for every process of one ledger, and
    /// nothing anyone without that key can compute.
    public static func fingerprintKey(from ledgerKey: SigningKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: ledgerKey.seed), info: Array("blepay-ledger idempotency fingerprint".utf8),
            outputByteCount: 32)
    }
}
