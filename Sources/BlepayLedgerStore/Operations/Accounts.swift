import BlepayLedger
import BlepayProtocol
import Foundation

/// Accounts, device enrollment and what authentication reads.
extension LedgerOperations {
    static func merchantBook(_ account: String) -> AccountID { AccountID("merchant:\(account)") }

    public func createAccount(_ tx: any SQLTransaction, _ body: CreateAccount, at now: Timestamp) throws -> AccountResource {
        // A merchant's account name is what its certificates show payers.
        let name = try Self.name(body.name, field: "name", limit: 64)
        let id = Self.randomID("acc_")
        try tx.run("INSERT INTO accounts (id, kind, name, created_at) VALUES (?, ?, ?, ?)",
            [.text(id), .text(body.kind.rawValue), .text(name), now.sqlValue])
        if body.kind == .merchant {
            var journal = Journal()
            journal.open(Self.merchantBook(id), kind: .merchant)
            try Books.save(tx, journal, at: now)
        }
        return AccountResource(id: id, kind: body.kind, name: name, balances: [],
            enrollmentToken: try issueEnrollmentToken(tx, account: id, at: now))
    }

    /// An account with its balances: a merchant's takings, or what a customer's instruments hold together.
    public func account(_ tx: any SQLTransaction, _ id: String, for principal: Principal) throws -> AccountResource {
        if case .device(let device) = principal, device.account != id { throw APIError.notFound("account") }
        guard let row = try tx.row("SELECT kind, name, blocked_at FROM accounts WHERE id = ?", [.text(id)]),
            let kind = CreateAccount.Kind(rawValue: try row.text(0))
        else { throw APIError.notFound("account") }
        let balances = kind == .merchant
            ? try Books.balances(tx, of: Self.merchantBook(id))
            : try tx.rows(
                """
                SELECT b.currency, SUM(b.posted), SUM(b.held) FROM balances b JOIN instruments i ON b.book = 'instrument:' || i.id
                WHERE i.account = ? GROUP BY b.currency ORDER BY b.currency
                """, [.text(id)]
            ).map { row in BalanceResource(currency: try row.text(0), posted: try row.integer(1), held: try row.integer(2)) }
        return AccountResource(id: id, kind: kind, name: try row.text(1), balances: balances, blocked: row.values[2] != .null)
    }

    /// Registers a device's keys with its account and hands out its request secret; a business device also gets
    /// its merchant certificate, binding its signing and Noise keys to the merchant under the ledger's key. The
    /// token is used up by it.
    public func enroll(_ tx: any SQLTransaction, token: EnrollmentToken, _ body: RegisterDevice, at now: Timestamp) throws
        -> DeviceResource
    {
        let account = token.account
        let name = try Self.text(body.name, field: "name", limit: 64)
        let signingKey = try Self.key(body.signingKey, field: "signingKey")
        guard let row = try tx.row("SELECT kind, name, blocked_at FROM accounts WHERE id = ?", [.text(account)]) else {
            throw APIError.notFound("account")
        }
        guard row.values[2] == .null else { throw APIError.accountBlocked }
        let isMerchant = try row.text(0) == CreateAccount.Kind.merchant.rawValue
        var certificate: MerchantCertificate?
        if isMerchant {
            guard let noiseHex = body.noiseKey else { throw APIError.invalid("noiseKey", "missing", "a business device needs its Noise key") }
            let noiseKey = try Self.key(noiseHex, field: "noiseKey")
            let merchantName = try row.text(1)
            certificate = try issueCertificate(
                merchant: account, name: merchantName, signingKey: signingKey, noiseKey: noiseKey, at: now)
        } else if body.noiseKey != nil {
            throw APIError.invalid("noiseKey", "unexpected", "only business devices have a Noise key")
        }
        guard try tx.row("SELECT id FROM devices WHERE signing_key = ?", [.blob(signingKey.bytes)]) == nil else {
            throw APIError(status: 409, code: "device.key-registered", "this signing key is already registered")
        }
        let id = Self.randomID("dev_")
        let secret = Self.randomBytes(32)
        try useEnrollmentToken(tx, token, device: id, at: now)
        try tx.run(
            """
            INSERT INTO devices (id, account, name, signing_key, noise_key, secret, secret_sealed, certificate, created_at)
            VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)
            """,
            [.text(id), .text(account), .text(name), .blob(signingKey.bytes),
             certificate.map { .blob($0.noiseKey.bytes) } ?? .null, .blob(try secretSeal.seal(secret, place: Self.place(device: id))),
             certificate.map { .blob($0.encoded) } ?? .null, now.sqlValue])
        return DeviceResource(
            id: id, accountId: account, name: name, secret: Data(secret).base64EncodedString(),
            certificate: certificate.map { Data($0.encoded).base64EncodedString() })
    }

    /// A device as authentication needs it, its secret unsealed (or as kept before secrets were sealed, until the
    /// sweep seals it).
    public func device(_ tx: any SQLTransaction, id: String) throws -> Pending<Device?> {
        try tx.send(
            """
            SELECT d.id, d.account, a.kind, d.signing_key, d.secret, d.secret_sealed, d.revoked_at, a.blocked_at
            FROM devices d JOIN accounts a ON a.id = d.account WHERE d.id = ?
            """, [.text(id)]
        ).map { [secretSeal] result in
            guard let row = result.rows.first else { return nil }
            guard let kind = CreateAccount.Kind(rawValue: try row.text(2)), let key = try? Key32(try row.blob(3)) else {
                throw StorageError(.corrupt, "device \(id)")
            }
            let secret = try row.integer(5) == 1 ? secretSeal.open(row.blob(4), place: Self.place(device: id)) : row.blob(4)
            return Device(id: try row.text(0), account: try row.text(1), accountKind: kind, signingKey: key, secret: secret,
                revoked: row.values[6] != .null, accountBlocked: row.values[7] != .null)
        }
    }

    /// Spends a request nonce of `device`; false if it was spent before. Nonces older than twice the timestamp
    /// window are pruned by `expire`.
    public func spendNonce(_ tx: any SQLTransaction, device: String, nonce: String, at now: Timestamp) throws -> Pending<Bool> {
        try tx.send("INSERT INTO nonces (device, nonce, seen_at) VALUES (?, ?, ?) ON CONFLICT (device, nonce) DO NOTHING",
            [.text(device), .text(nonce), now.sqlValue]).map { $0.changed == 1 }
    }

    /// The signing keys of a merchant's business devices, to check the requests it signed; a revoked device's
    /// requests are not its merchant's any more.
    func merchantKeys(_ tx: any SQLTransaction, merchant: String) throws -> [Key32] {
        try tx.rows("SELECT signing_key FROM devices WHERE account = ? AND noise_key IS NOT NULL AND revoked_at IS NULL",
            [.text(merchant)])
            .compactMap { row in try? Key32(try row.blob(0)) }
    }
}
