enum PlaceholderBlepayLedgerClient {}
