/// blepay's payment sessions: the customer and business state machines with the reference event model
/// (`receivedPayment`, `finishedPayment`, `cancelled`, `error`, `otherPaid`, `disconnected`), the error taxonomy,
/// the transport and ledger boundaries, the drivers that run the machines against them, and an in-memory network
/// and ledger for tests and benchmarks. The machines are pure value types; nothing here does I/O or reads a clock.
public enum BlepayPayments {}
