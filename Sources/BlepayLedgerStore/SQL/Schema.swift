import Foundation

/// The ledger's tables, one list of migrations for both databases. Amounts are minor units, times are
/// milliseconds since 1970, keys and signed messages are their exact bytes. Rows of transfers are never
/// updated or deleted: the books are corrected by new transfers only.
enum Schema {
    static let migrations: [String] = [
        """
        CREATE TABLE accounts (
            id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
            enrollment_token_hash BLOB NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE books (
            id TEXT PRIMARY KEY, kind TEXT NOT NULL);
        CREATE TABLE balances (
            book TEXT NOT NULL REFERENCES books(id), currency TEXT NOT NULL,
            posted INTEGER NOT NULL, held INTEGER NOT NULL CHECK (held >= 0), PRIMARY KEY (book, currency));
        CREATE TABLE transfers (
            id TEXT PRIMARY KEY, debit TEXT NOT NULL REFERENCES books(id), credit TEXT NOT NULL REFERENCES books(id),
            amount INTEGER NOT NULL CHECK (amount > 0), currency TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE holds (
            id TEXT PRIMARY KEY, debit TEXT NOT NULL REFERENCES books(id), credit TEXT NOT NULL REFERENCES books(id),
            amount INTEGER NOT NULL CHECK (amount > 0), currency TEXT NOT NULL, expires_at INTEGER NOT NULL,
            state TEXT NOT NULL);
        CREATE INDEX holds_pending ON holds (expires_at) WHERE state = 'pending';
        CREATE TABLE devices (
            id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts(id), name TEXT NOT NULL,
            signing_key BLOB NOT NULL UNIQUE, noise_key BLOB, secret BLOB NOT NULL, certificate BLOB,
            created_at INTEGER NOT NULL);
        CREATE TABLE instruments (
            id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts(id), type TEXT NOT NULL,
            details TEXT NOT NULL, blocked INTEGER NOT NULL, created_at INTEGER NOT NULL);
        CREATE INDEX instruments_account ON instruments (account);
        CREATE TABLE payments (
            id TEXT PRIMARY KEY, merchant TEXT NOT NULL REFERENCES accounts(id), request BLOB NOT NULL,
            status TEXT NOT NULL, acceptance BLOB, customer TEXT, instrument TEXT, failure INTEGER,
            history BLOB NOT NULL, expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
        CREATE INDEX payments_open ON payments (expires_at) WHERE status = 'authorization_required';
        CREATE TABLE pre_authorizations (
            id TEXT PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts(id), instrument TEXT NOT NULL,
            voucher BLOB NOT NULL, state TEXT NOT NULL, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE pre_authorization_uses (
            pre_authorization TEXT NOT NULL REFERENCES pre_authorizations(id), payment TEXT NOT NULL UNIQUE,
            sequence INTEGER NOT NULL, total INTEGER NOT NULL, merchant TEXT NOT NULL,
            request BLOB NOT NULL, acceptance BLOB NOT NULL, settled_at INTEGER NOT NULL,
            PRIMARY KEY (pre_authorization, sequence));
        CREATE TABLE idempotency_keys (
            principal TEXT NOT NULL, key TEXT NOT NULL, parameters_hash TEXT NOT NULL, status INTEGER NOT NULL,
            response BLOB NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (principal, key));
        CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
        CREATE TABLE nonces (
            device TEXT NOT NULL, nonce TEXT NOT NULL, seen_at INTEGER NOT NULL, PRIMARY KEY (device, nonce));
        CREATE INDEX nonces_age ON nonces (seen_at);
        """,
        // One payer per merchant's payment id across the online and offline paths; existing payments are
        // recorded first online, then offline, and a payment already paid both ways is left for the audit.
        """
        CREATE TABLE payment_payers (
            merchant TEXT NOT NULL, payment TEXT NOT NULL, payer TEXT NOT NULL, PRIMARY KEY (merchant, payment));
        INSERT INTO payment_payers (merchant, payment, payer)
            SELECT merchant, id, 'instrument:' || instrument FROM payments WHERE status IN ('executed', 'settled');
        INSERT INTO payment_payers (merchant, payment, payer)
            SELECT merchant, payment, 'voucher:' || pre_authorization FROM pre_authorization_uses u WHERE NOT EXISTS (
                SELECT 1 FROM payment_payers r WHERE r.merchant = u.merchant AND r.payment = u.payment);
        """,
        // A void no longer returns the escrow: each pre-authorization keeps when its rest returns (expiry plus the
        // grace of its issue), when it was voided and when it was released. Existing ones were issued with a 7-day
        // grace; a voided one was released at its void (or, with nothing left, is taken as voided when issued), which
        // ended its settlements then, and an expired one when it was swept.
        """
        ALTER TABLE pre_authorizations ADD COLUMN release_at INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE pre_authorizations ADD COLUMN voided_at INTEGER;
        ALTER TABLE pre_authorizations ADD COLUMN released_at INTEGER;
        UPDATE pre_authorizations SET release_at = expires_at + 604800000;
        UPDATE pre_authorizations SET released_at = COALESCE(
            (SELECT t.created_at FROM transfers t WHERE t.id = 'release:' || pre_authorizations.id), release_at)
            WHERE state = 'expired';
        UPDATE pre_authorizations SET voided_at = COALESCE(
            (SELECT t.created_at FROM transfers t WHERE t.id = 'release:' || pre_authorizations.id), created_at)
            WHERE state = 'voided';
        UPDATE pre_authorizations SET release_at = voided_at, released_at = voided_at WHERE state = 'voided';
        CREATE INDEX pre_authorizations_due ON pre_authorizations (release_at) WHERE released_at IS NULL;
        """,
        // A payment id is its merchant's: a use is unique by (merchant, payment), not by payment alone, and keeps the
        // transfer that paid it (new ones are named by voucher and sequence; existing ones keep `offline:{payment}`)
        // and the start of the range it claims (unknown for existing ones, which is read from their acceptance).
        """
        CREATE TABLE pre_authorization_uses_v4 (
            pre_authorization TEXT NOT NULL REFERENCES pre_authorizations(id), merchant TEXT NOT NULL, payment TEXT NOT NULL,
            sequence INTEGER NOT NULL, total INTEGER NOT NULL, spent_before INTEGER, transfer TEXT NOT NULL UNIQUE,
            request BLOB NOT NULL, acceptance BLOB NOT NULL, settled_at INTEGER NOT NULL,
            PRIMARY KEY (pre_authorization, sequence), UNIQUE (merchant, payment));
        INSERT INTO pre_authorization_uses_v4
            (pre_authorization, merchant, payment, sequence, total, spent_before, transfer, request, acceptance, settled_at)
            SELECT pre_authorization, merchant, payment, sequence, total, NULL, 'offline:' || payment, request, acceptance,
                settled_at FROM pre_authorization_uses;
        DROP TABLE pre_authorization_uses;
        ALTER TABLE pre_authorization_uses_v4 RENAME TO pre_authorization_uses;
        CREATE INDEX pre_authorization_uses_payment ON pre_authorization_uses (payment);
        """,
        // Double spends refused at settlement, each with both signed acceptances: the proof against the device key,
        // which is blocked while it has one.
        """
        CREATE TABLE double_spends (
            id TEXT PRIMARY KEY, pre_authorization TEXT NOT NULL REFERENCES pre_authorizations(id),
            device_key BLOB NOT NULL, kind TEXT NOT NULL, merchant TEXT NOT NULL, payment TEXT NOT NULL,
            request BLOB NOT NULL, acceptance BLOB NOT NULL, settled_merchant TEXT NOT NULL, settled_payment TEXT NOT NULL,
            settled_acceptance BLOB NOT NULL, detected_at INTEGER NOT NULL, UNIQUE (pre_authorization, merchant, payment));
        CREATE INDEX double_spends_device ON double_spends (device_key);
        CREATE INDEX double_spends_payment ON double_spends (payment);
        """,
        // A payment id is its merchant's online too: payments are unique by (merchant, id), not by id alone, so that
        // another merchant cannot take an id first. Each keeps the names of its hold and transfer (new ones are named
        // by merchant and id; existing ones keep `hold:{id}` and `pay:{id}`, which their receipts name).
        """
        CREATE TABLE payments_v6 (
            id TEXT NOT NULL, merchant TEXT NOT NULL REFERENCES accounts(id), request BLOB NOT NULL,
            status TEXT NOT NULL, acceptance BLOB, customer TEXT, instrument TEXT, failure INTEGER,
            history BLOB NOT NULL, expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
            hold TEXT NOT NULL UNIQUE, transfer TEXT NOT NULL UNIQUE, PRIMARY KEY (merchant, id));
        INSERT INTO payments_v6
            (id, merchant, request, status, acceptance, customer, instrument, failure, history, expires_at, updated_at, hold, transfer)
            SELECT id, merchant, request, status, acceptance, customer, instrument, failure, history, expires_at, updated_at,
                'hold:' || id, 'pay:' || id FROM payments;
        DROP TABLE payments;
        ALTER TABLE payments_v6 RENAME TO payments;
        CREATE INDEX payments_open ON payments (expires_at) WHERE status = 'authorization_required';
        CREATE INDEX payments_id ON payments (id);
        """,
        // Credentials with a lifecycle. Enrollment tokens get their own table: several may be outstanding, each
        // enrolls one device until it expires; an account's existing token expires 72 hours after this upgrade.
        // Accounts can be blocked and devices revoked. Device secrets and the stored answers carrying a credential
        // are sealed by the ledger (it holds the key): existing ones are marked here (`secret_sealed` 0, `sealed`
        // -1 for the records of the operator and of enrollments, which may carry one) and sealed by its sweep.
        """
        CREATE TABLE enrollment_tokens (
            hash BLOB PRIMARY KEY, account TEXT NOT NULL REFERENCES accounts(id), expires_at INTEGER NOT NULL,
            used_at INTEGER, device TEXT, created_at INTEGER NOT NULL);
        CREATE INDEX enrollment_tokens_account ON enrollment_tokens (account);
        INSERT INTO enrollment_tokens (hash, account, expires_at, created_at)
            SELECT enrollment_token_hash, id, {now} + 259200000, created_at FROM accounts;
        ALTER TABLE accounts DROP COLUMN enrollment_token_hash;
        ALTER TABLE accounts ADD COLUMN blocked_at INTEGER;
        ALTER TABLE devices ADD COLUMN revoked_at INTEGER;
        ALTER TABLE devices ADD COLUMN secret_sealed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE idempotency_keys ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
        UPDATE idempotency_keys SET sealed = -1 WHERE principal = 'admin' OR principal LIKE 'enrollment:%';
        CREATE INDEX devices_unsealed ON devices (id) WHERE secret_sealed = 0;
        CREATE INDEX idempotency_keys_unsealed ON idempotency_keys (principal) WHERE sealed = -1;
        """,
        // Refunds: money of a settled payment back to the book that paid it, each with its transfer and the signed
        // receipt. `sequence` orders them for `GET /v1/refunds`: it is taken from `refund_sequence`, whose one row
        // each refund updates, so refunds commit in the order of their sequence and a poller never skips one.
        // `customer` is the account that paid, for its devices.
        """
        CREATE TABLE refunds (
            id TEXT PRIMARY KEY, sequence INTEGER NOT NULL UNIQUE, merchant TEXT NOT NULL REFERENCES accounts(id),
            payment TEXT NOT NULL, customer TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount > 0),
            currency TEXT NOT NULL, reason TEXT, transfer TEXT NOT NULL UNIQUE, receipt BLOB NOT NULL,
            created_at INTEGER NOT NULL);
        CREATE INDEX refunds_payment ON refunds (merchant, payment);
        CREATE INDEX refunds_merchant_day ON refunds (merchant, created_at);
        CREATE INDEX refunds_customer ON refunds (customer, sequence);
        CREATE TABLE refund_sequence (last INTEGER NOT NULL);
        INSERT INTO refund_sequence (last) VALUES (0);
        """,
        // Payments are listed newest first by merchant or by payer (`GET /v1/payments`): an online payment keeps when
        // it was created, an offline one is listed by its settlement. An existing payment was created no later than it
        // was last changed or expired, the earliest of which it takes (its creation exactly while it is open).
        """
        ALTER TABLE payments ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
        UPDATE payments SET created_at = CASE WHEN updated_at < expires_at THEN updated_at ELSE expires_at END;
        CREATE INDEX payments_merchant_created ON payments (merchant, created_at, id);
        CREATE INDEX payments_customer_created ON payments (customer, created_at);
        CREATE INDEX pre_authorization_uses_merchant_settled ON pre_authorization_uses (merchant, settled_at, payment);
        CREATE INDEX pre_authorizations_account ON pre_authorizations (account);
        """,
    ]

    /// A migration's statements in `dialect`: PostgreSQL spells 64-bit integers, bytes and the time (`{now}`, in
    /// milliseconds since 1970) differently.
    static func statements(_ migration: String, for dialect: SQLDialect) -> [String] {
        let text = dialect == .postgres
            ? migration.replacingOccurrences(of: " INTEGER", with: " BIGINT").replacingOccurrences(of: " BLOB", with: " BYTEA")
                .replacingOccurrences(of: "{now}", with: "(CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) * 1000)")
            : migration.replacingOccurrences(of: "{now}", with: "(CAST(strftime('%s', 'now') AS INTEGER) * 1000)")
        return text.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    /// Applies the migrations `transaction` has not seen yet.
    static func migrate(_ transaction: any SQLTransaction) throws {
        try transaction.run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", [])
        let current = try transaction.row("SELECT MAX(version) FROM schema_version", []).flatMap { row in
            row.values[0] == .null ? nil : try row.integer(0)
        } ?? 0
        guard current <= migrations.count else {
            throw StorageError(.schemaTooNew, "the database has schema \(current); this ledger knows \(migrations.count)")
        }
        for (index, migration) in migrations.enumerated() where index + 1 > current {
            for statement in statements(migration, for: transaction.dialect) { try transaction.run(statement, []) }
            try transaction.run("INSERT INTO schema_version (version) VALUES (?)", [.integer(Int64(index + 1))])
        }
    }
}
