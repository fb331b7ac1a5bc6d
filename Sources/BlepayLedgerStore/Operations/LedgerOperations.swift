import BlepayLedger
import BlepayProtocol
import Crypto
import Foundation

/// Who is asking: the operator (admin token) or an enrolled device, which acts for its account.
public enum Principal: Sendable, Hashable {
    case admin
    case device(Device)

    /// The scope of idempotency keys and nonces.
    public var id: String {
        switch self {
        case .admin: "admin"
        case .device(let device): "device:\(device.id)"
        }
    }
}

/// An enrolled device as authentication needs it. The secret never leaves the ledger again after enrollment.
public struct Device: Sendable, Hashable {
    public let id: String
    public let account: String
    public let accountKind: CreateAccount.Kind
    public let signingKey: Key32
    public let secret: [UInt8]
    /// Revoked by the operator: refused for good.
    public let revoked: Bool
    /// Its account is blocked by the operator: refused while it is.
    public let accountBlocked: Bool
}

/// The ledger's operations, each a function of one open transaction: it reads what it needs (locking what it
/// changes), applies `BlepayLedger`'s rules, and writes the result. The caller (the HTTP server) wraps each in
/// authentication and idempotency within the same transaction, so a request's effects, its nonce and its stored
/// response commit together or not at all.
public struct LedgerOperations: Sendable {
    /// The ledger's keys, as the operator last rotated them.
    public let keyring: LedgerKeyring
    /// What idempotency records fingerprint requests under (`IdempotencyRecord`): derived from the ledger's first
    /// key, so that a rotation does not make every stored record a conflict.
    public let fingerprintKey: SymmetricKey
    /// What device secrets and the stored answers carrying them are sealed with: derived from the ledger's first key,
    /// which a rotation keeps, so that what was sealed before a rotation opens after it.
    public let secretSeal: SecretSeal
    /// How long a business's merchant certificate is valid.
    public var certificateLifetimeMilliseconds: UInt64 = 365 * 24 * 3600 * 1000
    /// How long an enrollment token enrolls a device.
    public var enrollmentTokenLifetimeMilliseconds: UInt64 = 72 * 3600 * 1000
    /// Bounds of a pre-authorization's lifetime.
    public var preAuthorizationLifetimes: ClosedRange<Int64> = 60...(30 * 24 * 3600)
    /// How long after a voucher's expiry its offline payments may still be settled before the rest of the escrow
    /// returns to the customer; fixed for each voucher when it is issued.
    public var preAuthorizationGraceMilliseconds: UInt64 = 24 * 3600 * 1000
    public static let maximumSettlementItems = 100
    /// Names the ledger gives the holds and transfers of new payments.
    let ids = TimeOrderedIDs()

    public init(keyring: LedgerKeyring) {
        self.keyring = keyring
        fingerprintKey = IdempotencyRecord.fingerprintKey(from: keyring.current.original)
        secretSeal = SecretSeal(ledgerKey: keyring.current.original)
    }

    /// A ledger with one key that never rotates (tests, tools).
    public init(ledgerKey: SigningKey) { self.init(keyring: LedgerKeyring(LedgerKeySet(original: ledgerKey))) }

    /// The active key: what signs certificates, vouchers, receipts and deny lists now.
    public var ledgerKey: SigningKey { keyring.current.active }

    /// The active key, as `GET /v1/ledger-key` publishes it.
    public var ledgerKeyResource: LedgerKeyResource {
        LedgerKeyResource(keyId: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey).bytes.hex, publicKey: ledgerKey.publicKey.bytes.hex)
    }

    static func randomID(_ prefix: String, bytes: Int = 10) -> String {
        prefix + randomBytes(bytes).hex
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func decodeBase64(_ text: String, field: String) throws(APIError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw APIError.invalid(field, "invalid-base64", "\(field) is not base64") }
        return [UInt8](data)
    }

    static func key(_ hex: String, field: String) throws(APIError) -> Key32 {
        guard let bytes = Hex.decode(hex, limit: 32), bytes.count == 32, let key = try? Key32(bytes) else {
            throw APIError.invalid(field, "invalid-key", "\(field) is 32 bytes of hex")
        }
        return key
    }

    static func text(_ value: String, field: String, limit: Int) throws(APIError) -> String {
        do { return try Text.validate(value, field: field, limit: limit) } catch {
            throw APIError.invalid(field, "invalid-text", error.message)
        }
    }

    /// A name shown to payers: no invisible formatting characters (`Text.validateName`), nothing that only looks like
    /// plain letters, no confusable scripts mixed (`DisplayName`).
    static func name(_ value: String, field: String, limit: Int) throws(APIError) -> String {
        let name: String
        do { name = try Text.validateName(value, field: field, limit: limit) } catch {
            throw APIError.invalid(field, "invalid-text", error.message)
        }
        if let confusion = DisplayName.confusion(in: name) { throw APIError.invalid(field, "confusable-text", "\(field) \(confusion)") }
        return name
    }

    static func money(_ amount: Int64, _ currency: String) throws(APIError) -> Money {
        let code: Currency
        do { code = try Currency(currency) } catch { throw APIError.invalid("currency", "invalid-currency", error.message) }
        guard amount > 0 else { throw APIError.invalid("amount", "invalid-amount", "an amount is more than 0") }
        do { return try Money(minorUnits: UInt64(amount), currency: code) } catch {
            throw APIError.invalid("amount", "invalid-amount", error.message)
        }
    }

    /// A base64 field holding one protocol message.
    static func message<T>(_ field: String, base64 text: String, _ parse: ([UInt8]) throws(ProtocolError) -> T) throws(APIError) -> T {
        let bytes = try decodeBase64(text, field: field)
        return try decode(field) { () throws(ProtocolError) in try parse(bytes) }
    }

    static func decode<T>(_ what: String, _ body: () throws(ProtocolError) -> T) throws(APIError) -> T {
        do { return try body() } catch {
            throw APIError.invalid(what, error.code.rawValue, "\(what): \(error.message)")
        }
    }
}
