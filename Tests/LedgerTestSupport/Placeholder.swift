enum PlaceholderLedgerTestSupport {}
