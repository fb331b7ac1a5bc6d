/// The reference ledger's domain, pure and storage-agnostic: instrument validation with field-level errors, the
/// double-entry journal (balanced transfers, balances that never go negative, two-phase holds), payments through
/// their statuses over it, pre-authorizations for offline payments with their settlement, and the API's rules for
/// request authentication (HMAC-SHA256) and idempotency keys. Storage, the HTTP server and the client build on it.
public enum BlepayLedger {}
