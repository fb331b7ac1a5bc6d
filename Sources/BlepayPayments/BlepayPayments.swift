/// blepay's payment sessions: the customer and business state machines with the reference event model
/// (`receivedPayment`, `finishedPayment`, `cancelled`, `error`, `otherPaid`, `disconnected`), the error taxonomy,
/// and the transport and ledger boundaries they drive. Pure: no I/O; time is passed in.
public enum BlepayPayments {}
