/// blepay's payment sessions: the customer and business state machines with the reference event model
/// (`receivedPayment`, `finishedPayment`, `cancelled`, `error`, `otherPaid`, `disconnected`), which are also each
/// payment's one record, the error taxonomy, the transport and ledger boundaries, and the drivers that run the
/// machines against them. The machines are pure value types; nothing here does I/O or reads a clock.
public enum BlepayPayments {}
