import BlepayLedger
import BlepayProtocol
import Crypto
import Foundation

/// An enrollment token as authentication found it: the account it enrolls into, and whether it was used already
/// (then it may only replay the enrollment that used it).
public struct EnrollmentToken: Sendable, Hashable {
    public let account: String
    let hash: [UInt8]
    public let used: Bool
}

/// Credentials with a lifecycle: enrollment tokens (kept hashed, each enrolling one device until it expires), the
/// operator's lists, the revocation of a device (for good) and the blocking of an account (until unblocked).
extension LedgerOperations {
    /// A fresh token for `account`; only its hash is kept.
    public func issueEnrollmentToken(_ tx: any SQLTransaction, account: String, at now: Timestamp) throws
        -> EnrollmentTokenResource
    {
        guard try tx.row("SELECT id FROM accounts WHERE id = ?", [.text(account)]) != nil else { throw APIError.notFound("account") }
        let token = Data(Self.randomBytes(32)).base64EncodedString()
        let expiresAt = now.adding(milliseconds: enrollmentTokenLifetimeMilliseconds)
        try tx.run("INSERT INTO enrollment_tokens (hash, account, expires_at, created_at) VALUES (?, ?, ?, ?)",
            [.blob(Self.tokenHash(token)), .text(account), expiresAt.sqlValue, now.sqlValue])
        return EnrollmentTokenResource(accountId: account, token: token, expiresAt: expiresAt.millisecondsSince1970)
    }

    /// The token presented as an enrollment's bearer: unknown and expired ones are refused.
    public func enrollmentToken(_ tx: any SQLTransaction, _ token: String, at now: Timestamp) throws -> EnrollmentToken {
        let hash = Self.tokenHash(token)
        guard let row = try tx.row("SELECT account, expires_at, used_at FROM enrollment_tokens WHERE hash = ?", [.blob(hash)])
        else { throw APIError.unauthenticated }
        guard try row.integer(1) > Int64(now.millisecondsSince1970) else { throw APIError.enrollmentTokenExpired }
        return EnrollmentToken(account: try row.text(0), hash: hash, used: row.values[2] != .null)
    }

    /// Uses `token` up for `device`, in the enrollment's transaction: of two enrollments racing with one token, one
    /// enrolls.
    func useEnrollmentToken(_ tx: any SQLTransaction, _ token: EnrollmentToken, device: String, at now: Timestamp) throws {
        guard try tx.run("UPDATE enrollment_tokens SET used_at = ?, device = ? WHERE hash = ? AND used_at IS NULL",
            [now.sqlValue, .text(device), .blob(token.hash)]) == 1
        else { throw APIError.enrollmentTokenUsed }
    }

    public static let maximumPageSize = 500

    /// The `kind` filter of the account list.
    public static func accountKind(_ text: String) throws(APIError) -> CreateAccount.Kind {
        guard let kind = CreateAccount.Kind(rawValue: text) else {
            throw APIError.invalid("kind", "invalid-value", "kind is customer or merchant")
        }
        return kind
    }

    /// Accounts by id, `limit` of them after `after`, of one `kind` if given.
    public func accounts(_ tx: any SQLTransaction, kind: CreateAccount.Kind?, limit: Int, after: String?) throws -> AccountList {
        guard (1...Self.maximumPageSize).contains(limit) else {
            throw APIError.invalid("limit", "out-of-range", "limit is from 1 to \(Self.maximumPageSize)")
        }
        var binds: [SQLValue] = [.text(after ?? "")]
        var sql = "SELECT id, kind, name, blocked_at, created_at FROM accounts WHERE id > ?"
        if let kind {
            sql += " AND kind = ?"
            binds.append(.text(kind.rawValue))
        }
        let rows = try tx.rows(sql + " ORDER BY id LIMIT ?", binds + [.integer(Int64(limit + 1))])
        let accounts = try rows.prefix(limit).map { row in
            guard let kind = CreateAccount.Kind(rawValue: try row.text(1)) else { throw StorageError(.corrupt, "account \(try row.text(0))") }
            return AccountSummary(id: try row.text(0), kind: kind, name: try row.text(2), blocked: row.values[3] != .null,
                createdAt: UInt64(try row.integer(4)))
        }
        return AccountList(accounts: accounts, next: rows.count > limit ? accounts.last?.id : nil)
    }

    /// The devices of an account, oldest first, revoked ones too.
    public func devices(_ tx: any SQLTransaction, account: String) throws -> DeviceList {
        guard try tx.row("SELECT id FROM accounts WHERE id = ?", [.text(account)]) != nil else { throw APIError.notFound("account") }
        return DeviceList(devices: try tx.rows(
            "SELECT id FROM devices WHERE account = ? ORDER BY created_at, id", [.text(account)]
        ).map { row in try enrolledDevice(tx, try row.text(0)) })
    }

    /// Revokes a device for good: its requests are refused and its signing key is on the deny list. Revoking it
    /// again changes nothing.
    public func revoke(_ tx: any SQLTransaction, device id: String, at now: Timestamp) throws -> EnrolledDevice {
        try tx.run("UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [now.sqlValue, .text(id)])
        return try enrolledDevice(tx, id)
    }

    /// Blocks or unblocks an account: while blocked its devices are refused, a merchant's payments cannot be made,
    /// and its business devices' keys are on the deny list.
    public func block(_ tx: any SQLTransaction, account: String, blocked: Bool, at now: Timestamp) throws -> AccountResource {
        let changed = try blocked
            ? tx.run("UPDATE accounts SET blocked_at = COALESCE(blocked_at, ?) WHERE id = ?", [now.sqlValue, .text(account)])
            : tx.run("UPDATE accounts SET blocked_at = NULL WHERE id = ?", [.text(account)])
        guard changed == 1 else { throw APIError.notFound("account") }
        return try self.account(tx, account, for: .admin)
    }

    /// The keys a deny list blocks besides double spenders': revoked devices' and blocked merchants' business devices'.
    func deniedDeviceKeys(_ tx: any SQLTransaction) throws -> [Key32] {
        try tx.rows(
            """
            SELECT d.signing_key FROM devices d JOIN accounts a ON a.id = d.account
            WHERE d.revoked_at IS NOT NULL OR (a.blocked_at IS NOT NULL AND d.noise_key IS NOT NULL)
            """, []
        ).map { row in
            guard let key = try? Key32(try row.blob(0)) else { throw StorageError(.corrupt, "a device's signing key") }
            return key
        }
    }

    private func enrolledDevice(_ tx: any SQLTransaction, _ id: String) throws -> EnrolledDevice {
        guard let row = try tx.row(
            "SELECT account, name, signing_key, noise_key, created_at, revoked_at FROM devices WHERE id = ?", [.text(id)])
        else { throw APIError.notFound("device") }
        return EnrolledDevice(id: id, accountId: try row.text(0), name: try row.text(1), signingKey: try row.blob(2).hex,
            business: row.values[3] != .null, createdAt: UInt64(try row.integer(4)),
            revokedAt: row.values[5] == .null ? nil : UInt64(try row.integer(5)))
    }

    /// Where a device's sealed secret is kept, which the seal binds it to.
    static func place(device id: String) -> String { "device:\(id)" }

    static func tokenHash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }
}

extension APIError {
    public static let deviceRevoked = APIError(status: 401, code: "device.revoked", "this device was revoked by the operator")
    public static let accountBlocked = APIError(status: 403, code: "account.blocked", "the account is blocked by the operator")
    public static let enrollmentTokenUsed = APIError(
        status: 401, code: "auth.enrollment-token-used", "this enrollment token enrolled a device already; ask for a fresh one")
    public static let enrollmentTokenExpired = APIError(
        status: 401, code: "auth.enrollment-token-expired", "this enrollment token expired; ask for a fresh one")
}
