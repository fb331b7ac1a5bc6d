/// What blepay's programs share for their settings: TOML files read key by key, where a key left out takes its
/// default and an unknown key, a wrong type or a value out of range is one `ConfigurationError` line naming the
/// file, the key and why (the programs exit with 78, `EX_CONFIG`); and secrets kept in files only their owner reads.
enum BlepayConfiguration {}
