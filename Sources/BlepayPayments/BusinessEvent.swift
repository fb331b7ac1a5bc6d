import BlepayProtocol

/// What the business's app sees of its own payments.
public enum BusinessEvent: Sendable, Hashable {
    /// The request was sent to a customer (when opened, or when the customer connected while it was open).
    case offered(PaymentID, PeerID)
    /// A customer declined it.
    case declined(PaymentID, by: PeerID)
    /// A customer could not take it (its clock differs from the business's by more than the protocol allows, say).
    case customerRefused(PaymentID, by: PeerID, PaymentError)
    /// The first valid acceptance: it is being executed with the ledger.
    case accepted(PaymentID, by: PeerID, total: Money)
    /// An acceptance that could not win (mismatch, bad signature, unknown or ended payment), or that the ledger
    /// refused for a reason of that payer (funds, instrument, key): the request stays open for the others.
    case acceptanceRefused(PaymentID, by: PeerID, PaymentError)
    /// The ledger did not answer in time; its status is being looked up by payment id. Not a result.
    case outcomePending(PaymentID)
    case finished(PaymentID, by: PeerID, Receipt)
    /// The ledger refused the winner's payment; nothing was charged and the request is closed.
    case failed(PaymentID, by: PeerID, PaymentError)
    case cancelled(PaymentID)
    case expired(PaymentID)
    /// A payment accepted offline (finished with a pending receipt) was settled by the ledger, with the receipt the
    /// ledger signed for it when it gave one.
    case settled(PaymentID, Receipt?)
    /// The ledger refused to settle a payment accepted offline, for good; its stable code says why.
    case settlementRefused(PaymentID, PaymentError)
}

/// What the business machine asks its driver to do.
public enum BusinessAction: Sendable, Hashable {
    case emit(BusinessEvent)
    case send(PeerID, Message)
    /// Execute this acceptance with the ledger; the payment id is the idempotency key. Asked at most once per payment.
    case execute(PaymentRequest, PaymentAcceptance)
    /// Look up the payment's status at the ledger (after an unknown outcome). Never an execution.
    case lookUpStatus(PaymentID)
    /// Keep this acceptance, checked offline under its pre-authorization, for settlement once the ledger is back.
    /// Asked at most once per payment; answered as an execution is, with a pending receipt.
    case queue(PaymentRequest, PaymentAcceptance)
    /// Read back what was kept for settlement under the query's payment id, which this machine no longer holds (the
    /// daemon restarted since), to answer the customer who asks (`recalled`).
    case recall(ResultQuery, from: PeerID)
}

/// The ledger's answer to an execution or a status look-up.
public enum LedgerOutcome: Sendable, Hashable {
    case executed(Receipt)
    /// Certainly not executed: refused, or the ledger could not be reached before anything was sent.
    case notExecuted(PaymentError)
    /// It may or may not have been executed (a timeout, a connection lost mid-request).
    case unknown(String?)
}
