import BlepayProtocol
import Crypto

/// What the ledger must use again but a copy of its database must not give away: device request secrets, and the
/// stored answers that carry one. Sealed with ChaChaPoly under a key derived from the ledger's signing key, bound
/// to the place it is kept, so a sealed value moved to another row does not open.
public struct SecretSeal: Sendable {
    private let key: SymmetricKey

    public init(ledgerKey: SigningKey) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: ledgerKey.seed), info: Array("blepay-ledger secrets at rest".utf8),
            outputByteCount: 32)
    }

    /// `place` names where the sealed bytes are kept (a device, an idempotency record).
    public func seal(_ secret: [UInt8], place: String) throws -> [UInt8] {
        Array(try ChaChaPoly.seal(secret, using: key, authenticating: Array(place.utf8)).combined)
    }

    /// Sealed bytes that do not open (another ledger's key, another place, changed bytes) are a corrupt row.
    public func open(_ sealed: [UInt8], place: String) throws(StorageError) -> [UInt8] {
        do {
            return Array(try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: key, authenticating: Array(place.utf8)))
        } catch {
            throw StorageError(.corrupt, "the sealed secret of \(place) does not open under this ledger's key")
        }
    }
}
