/// The bodies of the operator's credential routes: enrollment tokens, the account and device lists, blocking and
/// revocation (`docs/ledger.md`, "Credentials").

/// A response carrying a credential the ledger shows once. Its idempotency record keeps `replayed` instead: the
/// response without the credential, saying so; or, when `replayed` is nil, the whole response sealed under the
/// ledger's key, for a replay that must hand the same credential back.
public protocol CarriesCredential: Encodable, Sendable {
    var replayed: Self? { get }
}

/// A fresh enrollment token of an account: it enrolls one device, until it expires.
public struct EnrollmentTokenResource: Codable, Sendable, Hashable {
    public let accountId: String
    /// The bearer token; only in the answer that issued it.
    public let token: String?
    public let expiresAt: UInt64
    /// True in a replayed answer: the token is not kept, issue another.
    public let withheld: Bool?

    public init(accountId: String, token: String?, expiresAt: UInt64) {
        self.accountId = accountId
        self.token = token
        self.expiresAt = expiresAt
        withheld = token == nil ? true : nil
    }
}

extension EnrollmentTokenResource: CarriesCredential {
    public var replayed: EnrollmentTokenResource? { EnrollmentTokenResource(accountId: accountId, token: nil, expiresAt: expiresAt) }
}

/// One account in the operator's list.
public struct AccountSummary: Codable, Sendable, Hashable {
    public let id: String
    public let kind: CreateAccount.Kind
    public let name: String
    public let blocked: Bool
    public let createdAt: UInt64

    public init(id: String, kind: CreateAccount.Kind, name: String, blocked: Bool, createdAt: UInt64) {
        self.id = id
        self.kind = kind
        self.name = name
        self.blocked = blocked
        self.createdAt = createdAt
    }
}

/// A page of accounts by id; `next` is the `after` of the next page, absent on the last.
public struct AccountList: Codable, Sendable, Hashable {
    public let accounts: [AccountSummary]
    public let next: String?

    public init(accounts: [AccountSummary], next: String?) {
        self.accounts = accounts
        self.next = next
    }
}

/// An enrolled device as the operator sees it: never its secret.
public struct EnrolledDevice: Codable, Sendable, Hashable {
    public let id: String
    public let accountId: String
    public let name: String
    /// Its Ed25519 signing key (hex), which a revocation puts on the deny list.
    public let signingKey: String
    /// A business device (it has a Noise key and a merchant certificate).
    public let business: Bool
    public let createdAt: UInt64
    /// When the operator revoked it; a revoked device is refused for good.
    public let revokedAt: UInt64?

    public init(id: String, accountId: String, name: String, signingKey: String, business: Bool, createdAt: UInt64,
        revokedAt: UInt64?)
    {
        self.id = id
        self.accountId = accountId
        self.name = name
        self.signingKey = signingKey
        self.business = business
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

public struct DeviceList: Codable, Sendable, Hashable {
    public let devices: [EnrolledDevice]

    public init(devices: [EnrolledDevice]) { self.devices = devices }
}
