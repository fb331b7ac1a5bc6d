/// The reference ledger's domain, pure and storage-agnostic: instrument validation with field-level errors, the
/// double-entry journal (balanced transfers, balances that never go negative, two-phase holds), payments through
/// their statuses over it, and pre-authorizations for offline payments with their settlement. Storage, the HTTP API
/// and the client build on it.
public enum BlepayLedger {}
