/// BlepayDaemonStore: a daemon's durable state in one SQLite file in its state directory (GRDB; WAL, synchronous
/// FULL): the customer's pre-authorization vouchers and every use it signed, and the business's queue of payments
/// accepted offline and the batches that settle them. Each schema version is migrated in one
/// transaction; a file it cannot migrate is refused and left as it was, never dropped and recreated.
