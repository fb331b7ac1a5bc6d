/// What blepay's programs share to run as system services: TOML files read key by key, where a key left out takes
/// its default and an unknown key, a wrong type or a value out of range is one `ConfigurationError` line naming the
/// file, the key and why (the programs exit with 78, `EX_CONFIG`); secrets kept in files only their owner reads; and
/// systemd's readiness and watchdog notifications.
enum BlepayConfiguration {}
