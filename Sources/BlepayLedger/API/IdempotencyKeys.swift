import BlepayProtocol
import Crypto

/// The `Idempotency-Key` rule for every POST: the first request with a key is carried out and its response kept;
/// the same key with the same parameters gets that response again; with other parameters, a conflict. A value type
/// over what storage keeps (key → parameters' hash and response).
public struct IdempotencyRecord: Sendable, Hashable, Codable {
    public let key: String
    /// SHA-256 of the method, path and body, hex.
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

    public static func parametersHash(method: String, path: String, body: [UInt8]) -> String {
        var hasher = SHA256()
        hasher.update(data: Array("\(method.uppercased()) \(path)\n".utf8))
        hasher.update(data: body)
        return hasher.finalize().hex
    }

    /// What to do with a request given the record stored under its key, if any.
    public static func decide(stored: IdempotencyRecord?, parametersHash: String) -> Decision {
        guard let stored else { return .execute }
        return stored.parametersHash == parametersHash ? .replay(status: stored.status, response: stored.response) : .conflict
    }
}
