/// The daemons' client of the ledger's HTTP API: signs every request with the device's secret, keeps each POST's
/// idempotency key on disk before the first send so that a retry (even after a restart) cannot execute twice,
/// retries what is safe to retry, and maps answers to the payment error taxonomy.
