/// In-memory doubles of the payment boundaries, for tests and benchmarks, kept out of the modules the daemons ship:
/// a network of links with a radio's faults, a ledger, and a broadcast scenario with real keys and signatures.
public enum BlepayPaymentsTesting {}
