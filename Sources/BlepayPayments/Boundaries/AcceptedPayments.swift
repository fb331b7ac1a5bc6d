import BlepayProtocol

/// Where the customer keeps each payment it accepted until its outcome is known, so that neither a restart nor a
/// crash between the acceptance and the answer leaves the customer not knowing whether it paid: the next
/// registration seeks each one again (`CustomerMachine.restore`). An acceptance is sent only once it is kept.
public protocol AcceptedPayments: Sendable {
    /// Keeps the signed pair, durably, before the acceptance is sent; a failure stops the acceptance.
    func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) throws(PaymentError)
    /// The payment's outcome is known: it need not be sought again.
    func concluded(_ id: PaymentID)
    /// The payments kept and not concluded, oldest first.
    func unconcluded() -> [KeptPayment]
}
