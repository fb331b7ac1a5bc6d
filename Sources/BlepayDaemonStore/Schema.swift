import GRDB

/// The state file's schema, one registered migration per version. GRDB runs each migration in its own transaction;
/// a version this build does not know stops it before any is run.
enum Schema {
    static func migrate(_ queue: DatabaseQueue, path: String) throws(DaemonStoreError) {
        let migrator = migrator
        do {
            if try queue.read({ db in try migrator.hasBeenSuperseded(db) }) {
                throw DaemonStoreError(.newerSchema, "\(path) was written by a newer blepay; it is left as it is")
            }
            try migrator.migrate(queue)
        } catch let error as DaemonStoreError {
            throw error
        } catch {
            throw DaemonStoreError(.migrationFailed, "\(path): \(error); it was left as it was")
        }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1 vouchers") { db in
            // One row per voucher the ledger issued to this device; `uses` and `spent` only ever grow.
            try db.execute(sql: """
                CREATE TABLE vouchers (
                    id BLOB PRIMARY KEY NOT NULL,
                    encoded BLOB NOT NULL,
                    currency TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    uses INTEGER NOT NULL DEFAULT 0,
                    spent INTEGER NOT NULL DEFAULT 0,
                    voided_at INTEGER
                ) STRICT;
                CREATE TABLE voucher_uses (
                    voucher_id BLOB NOT NULL REFERENCES vouchers(id),
                    sequence INTEGER NOT NULL,
                    payment_id BLOB NOT NULL UNIQUE,
                    total INTEGER NOT NULL,
                    spent_before INTEGER NOT NULL,
                    signed_at INTEGER NOT NULL,
                    PRIMARY KEY (voucher_id, sequence)
                ) STRICT;
                """)
        }
        migrator.registerMigration("2 settlement queue") { db in
            // The business's payments accepted offline, until the ledger has settled or refused each; and the
            // batches they go to the ledger in, each with the idempotency key it is sent (and resent) under.
            try db.execute(sql: """
                CREATE TABLE settlement_batches (
                    id INTEGER PRIMARY KEY,
                    idempotency_key TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL,
                    closed_at INTEGER
                ) STRICT;
                CREATE TABLE offline_payments (
                    payment_id BLOB PRIMARY KEY NOT NULL,
                    request BLOB NOT NULL,
                    acceptance BLOB NOT NULL,
                    currency TEXT NOT NULL,
                    total INTEGER NOT NULL,
                    queued_at INTEGER NOT NULL,
                    batch_id INTEGER REFERENCES settlement_batches(id),
                    batch_position INTEGER,
                    outcome TEXT,
                    ended_at INTEGER
                ) STRICT;
                CREATE INDEX offline_payments_waiting ON offline_payments (queued_at) WHERE outcome IS NULL;
                """)
        }
        migrator.registerMigration("3 voucher claims") { db in
            // Each voucher use this business accepted: a second payment presenting the same use, or a range of the
            // voucher that overlaps one already accepted, is a double spend at this business and is refused.
            try db.execute(sql: """
                CREATE TABLE voucher_claims (
                    voucher_id BLOB NOT NULL,
                    sequence INTEGER NOT NULL,
                    spent_before INTEGER NOT NULL,
                    total INTEGER NOT NULL,
                    payment_id BLOB NOT NULL UNIQUE REFERENCES offline_payments(payment_id),
                    PRIMARY KEY (voucher_id, sequence)
                ) STRICT;
                """)
        }
        migrator.registerMigration("4 deny list") { db in
            // The newest deny list the ledger signed (voided vouchers, blocked devices), for a business that takes
            // vouchers while it cannot ask: one row, replaced only by a newer list.
            try db.execute(sql: """
                CREATE TABLE deny_list (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    encoded BLOB NOT NULL,
                    issued_at INTEGER NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("5 accepted payments") { db in
            // The customer's acceptances whose outcome it has not learnt yet: sought again after a restart.
            try db.execute(sql: """
                CREATE TABLE accepted_payments (
                    payment_id BLOB PRIMARY KEY NOT NULL,
                    request BLOB NOT NULL,
                    acceptance BLOB NOT NULL,
                    accepted_at INTEGER NOT NULL
                ) STRICT;
                """)
        }
        migrator.registerMigration("6 payment history") { db in
            // Every payment this daemon took part in, with its events in order and the refunds made of it, for as
            // long as `[history] retention_days` keeps ended ones. A payment id is unique per merchant only; `id` is
            // the order rows were kept in, which pages break ties by. The customer learns of refunds from the ledger
            // after the cursor kept in `history_refund_cursor` (one row).
            try db.execute(sql: """
                CREATE TABLE history_payments (
                    id INTEGER PRIMARY KEY,
                    merchant_id TEXT NOT NULL,
                    payment_id BLOB NOT NULL,
                    request BLOB NOT NULL,
                    total INTEGER,
                    tip INTEGER,
                    counterpart TEXT,
                    status TEXT NOT NULL,
                    ended INTEGER NOT NULL,
                    receipt BLOB,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    UNIQUE (merchant_id, payment_id)
                ) STRICT;
                CREATE INDEX history_payments_newest ON history_payments (created_at, id);
                CREATE INDEX history_payments_by_id ON history_payments (payment_id);
                CREATE TABLE history_events (
                    payment INTEGER NOT NULL REFERENCES history_payments(id),
                    sequence INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    details TEXT NOT NULL,
                    PRIMARY KEY (payment, sequence)
                ) STRICT;
                CREATE TABLE history_refunds (
                    refund_id TEXT PRIMARY KEY NOT NULL,
                    merchant_id TEXT NOT NULL,
                    payment_id BLOB NOT NULL,
                    amount INTEGER NOT NULL,
                    currency TEXT NOT NULL,
                    refunded INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    receipt BLOB NOT NULL,
                    at INTEGER NOT NULL
                ) STRICT;
                CREATE INDEX history_refunds_payment ON history_refunds (merchant_id, payment_id);
                CREATE TABLE history_refund_cursor (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    cursor TEXT NOT NULL
                ) STRICT;
                """)
        }
        return migrator
    }
}
