/// The reference ledger's HTTP server: Hummingbird routes over `BlepayLedgerStore`'s operations, with request
/// authentication, idempotency, long-polled payment status and expiry, configured from `ledger.toml`.
