print("blepay-ledger")
