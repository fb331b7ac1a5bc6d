import BlepayConfiguration
import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation

/// Where the ledger keeps its keys in its state directory: the first key in `signing_key_file` (as before any
/// rotation), each later one in `ledger-key-<key id>.key` (mode 0600), and which is active, next or retired in
/// `ledger-keys.json`. Without that file the ledger has never rotated: its first key is the active one.
/// `blepay-ledger rotate-key` and `activate-key` change the files; a running ledger reloads them (`KeyReload`).
public enum LedgerKeyFiles {
    /// One line of `ledger-keys.json`.
    struct Stored: Codable {
        let keyId: String
        /// Relative to the state directory.
        let file: String
        let status: LedgerKeySet.Status
    }

    struct Listing: Codable {
        let keys: [Stored]
    }

    /// A key file that does not hold what `ledger-keys.json` says, or a listing that breaks the rotation's rules.
    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "keys.unusable: \(path): \(reason)" }
    }

    public static let listingFile = "ledger-keys.json"
    public typealias Refusal = LedgerKeySet.Refusal

    /// The keys as the files hold them; the first key (and the state directory) is created on a ledger's first start.
    public static func load(_ configuration: LedgerConfiguration) throws -> LedgerKeySet {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let original = try SigningKey(seed: SecretFile.loadOrCreate(configuration.resolve(configuration.signingKeyFile)) {
            SigningKey().seed
        })
        let listingPath = configuration.resolve(listingFile)
        guard FileManager.default.fileExists(atPath: listingPath) else { return LedgerKeySet(original: original) }
        let listing = try JSONDecoder().decode(Listing.self, from: Data(SecretFile.load(listingPath)))
        var entries: [LedgerKeySet.Entry] = []
        for stored in listing.keys {
            let key = try SigningKey(seed: SecretFile.load(configuration.resolve(stored.file)))
            guard TrustedLedgerKeys.keyID(of: key.publicKey).bytes.hex == stored.keyId else {
                throw Unusable(path: configuration.resolve(stored.file), reason: "is not key \(stored.keyId)")
            }
            entries.append(LedgerKeySet.Entry(key: key, status: stored.status))
        }
        guard let keys = LedgerKeySet(original: original, entries: entries) else {
            throw Unusable(
                path: listingPath, reason: "must list \(configuration.signingKeyFile), one active key and at most one next")
        }
        return keys
    }

    /// Creates a successor key and publishes it as next; returns it as `GET /v1/ledger-keys` will list it.
    public static func rotate(_ configuration: LedgerConfiguration) throws -> LedgerKeyResource {
        var keys = try load(configuration)
        let created = SigningKey()
        try keys.add(successor: created)
        let id = TrustedLedgerKeys.keyID(of: created.publicKey).bytes.hex
        _ = try SecretFile.loadOrCreate(configuration.resolve(keyFile(id))) { created.seed }
        try save(keys, configuration)
        return keys.resources.last!
    }

    /// Makes the published successor `id` the active key, retiring the active one.
    public static func activate(_ id: String, _ configuration: LedgerConfiguration) throws -> LedgerKeySet {
        var keys = try load(configuration)
        guard let bytes = Hex.decode(id, limit: 8), let keyID = try? FixedBytes<Bytes8>(bytes) else {
            throw LedgerKeySet.Refusal(code: .notSuccessor, detail: "\(id) is not a key id (16 hex digits)")
        }
        try keys.activate(keyID)
        try save(keys, configuration)
        return keys
    }

    private static func keyFile(_ id: String) -> String { "ledger-key-\(id).key" }

    private static func save(_ keys: LedgerKeySet, _ configuration: LedgerConfiguration) throws {
        let original = TrustedLedgerKeys.keyID(of: keys.original.publicKey)
        let listing = Listing(keys: keys.entries.map { entry in
            Stored(
                keyId: entry.id.bytes.hex, file: entry.id == original ? configuration.signingKeyFile : keyFile(entry.id.bytes.hex),
                status: entry.status)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try SecretFile.replace(configuration.resolve(listingFile), with: Array(try encoder.encode(listing)))
    }
}
