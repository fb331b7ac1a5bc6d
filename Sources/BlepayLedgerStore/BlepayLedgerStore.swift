/// The ledger's durable storage. One narrow SQL transaction interface (`SQLTransaction`) with two real
/// implementations behind `LedgerStorage`: SQLite through GRDB (one file, WAL, synchronous FULL, concurrent writes
/// grouped into one durable commit) and PostgreSQL through postgres-nio (several stateless ledger processes on one
/// database). The ledger's operations (`LedgerRepository`) are written once over it and run the pure rules of
/// `BlepayLedger` inside one transaction each: an operation either happens whole or not at all.
public enum BlepayLedgerStore {}
