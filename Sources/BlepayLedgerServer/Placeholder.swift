enum PlaceholderBlepayLedgerServer {}
