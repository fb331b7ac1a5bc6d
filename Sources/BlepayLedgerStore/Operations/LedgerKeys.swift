import BlepayLedger
import BlepayProtocol
import Synchronization

/// The ledger's signing keys and where each is in its rotation: one active key signs everything the ledger issues
/// from now on; a successor is published ahead of its activation, so that businesses and customers can trust it
/// before it signs; retired keys stay published and trusted, so that what they signed keeps verifying. Every
/// signed structure names its key by id (`TrustedLedgerKeys.keyID`), so any number of them verify side by side.
public struct LedgerKeySet: Sendable {
    public enum Status: String, Sendable, Hashable, Codable {
        case active, next, retired
    }

    public struct Entry: Sendable {
        public let key: SigningKey
        public var status: Status
        public var id: FixedBytes<Bytes8> { TrustedLedgerKeys.keyID(of: key.publicKey) }

        public init(key: SigningKey, status: Status) {
            self.key = key
            self.status = status
        }
    }

    /// Why a rotation step is refused; the CLI prints it.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Code: String, Sendable, Hashable {
            /// A successor is published already: activate it before creating another.
            case successorPending = "keys.successor-pending"
            /// No key has this id, or it is not the published successor.
            case notSuccessor = "keys.not-successor"
        }

        public let code: Code
        public let detail: String
        public var description: String { "\(code.rawValue): \(detail)" }

        public init(code: Code, detail: String) {
            self.code = code
            self.detail = detail
        }
    }

    /// The ledger's first key: what keys derived from "the ledger key" come from (the idempotency fingerprint key,
    /// and any secret sealed under it), so that they survive every rotation. It is never deleted.
    public let original: SigningKey
    /// Oldest first; exactly one is active.
    public private(set) var entries: [Entry]

    /// A ledger that never rotated: its first key, active.
    public init(original: SigningKey) {
        self.original = original
        entries = [Entry(key: original, status: .active)]
    }

    /// Keys as stored; `original` must be among them and exactly one must be active.
    public init?(original: SigningKey, entries: [Entry]) {
        guard entries.filter({ $0.status == .active }).count == 1, entries.filter({ $0.status == .next }).count <= 1,
            entries.contains(where: { $0.key.publicKey == original.publicKey })
        else { return nil }
        self.original = original
        self.entries = entries
    }

    /// What signs certificates, vouchers, receipts and deny lists now.
    public var active: SigningKey { entries.first { $0.status == .active }!.key }

    /// Every published key (active, successor, retired): what the ledger checks its own signatures against.
    public var trusted: TrustedLedgerKeys { TrustedLedgerKeys(entries.map(\.key.publicKey)) }

    /// Publishes `successor` as the next key; it signs nothing until `activate`.
    public mutating func add(successor: SigningKey) throws(Refusal) {
        if let pending = entries.first(where: { $0.status == .next }) {
            throw Refusal(code: .successorPending, detail: "key \(pending.id) is published and not yet active")
        }
        entries.append(Entry(key: successor, status: .next))
    }

    /// The published successor `id` becomes the active key; the active one is retired (still published).
    public mutating func activate(_ id: FixedBytes<Bytes8>) throws(Refusal) {
        guard let index = entries.firstIndex(where: { $0.id == id && $0.status == .next }) else {
            throw Refusal(code: .notSuccessor, detail: "no published successor has key id \(id)")
        }
        for other in entries.indices where entries[other].status == .active { entries[other].status = .retired }
        entries[index].status = .active
    }

    /// The public keys with their ids and status, oldest first, as `GET /v1/ledger-keys` lists them.
    public var resources: [LedgerKeyResource] {
        entries.map { LedgerKeyResource(keyId: $0.id.bytes.hex, publicKey: $0.key.publicKey.bytes.hex, status: $0.status.rawValue) }
    }
}

/// The key set a running ledger signs and verifies with: replaced whole when the operator rotates (the server reloads
/// it), read whole by every operation, so that no operation sees half a rotation.
public final class LedgerKeyring: Sendable {
    private let keys: Mutex<LedgerKeySet>

    public init(_ keys: LedgerKeySet) { self.keys = Mutex(keys) }

    public var current: LedgerKeySet { keys.withLock { $0 } }

    public func replace(with keys: LedgerKeySet) { self.keys.withLock { $0 = keys } }
}
