import BlepayProtocol

/// What the customer's app sees, the reference SDK's events: per payment `receivedPayment`, then one of
/// `finishedPayment`, `cancelled`, `error`, `otherPaid`; per connection `disconnected`, after which nothing more.
/// One more, outside that sequence: `outcomeFound`, when a payment that ended `error(outcome-unknown)` (its link was
/// lost after accepting) learns its outcome over a later connection to the same merchant.
public enum CustomerEvent: Sendable, Hashable {
    case receivedPayment(PeerID, PaymentRequest)
    case finishedPayment(PeerID, Receipt)
    /// By either side.
    case cancelled(PeerID, PaymentID, by: Side)
    /// `paymentID` is nil for a failure of the connection itself. A request refused before it was shown
    /// (`clock-skew`) is one `error` naming its payment, with no `receivedPayment` before it.
    case error(PeerID, PaymentID?, PaymentError)
    case otherPaid(PeerID, PaymentID)
    case disconnected(PeerID)
    /// Over connection `PeerID`: the payment finished with this receipt, or failed with this error, after all.
    case outcomeFound(PeerID, PaymentID, Result<Receipt, PaymentError>)

    public enum Side: Sendable, Hashable {
        case customer
        case business
    }

    public var peer: PeerID {
        switch self {
        case .receivedPayment(let peer, _), .finishedPayment(let peer, _), .cancelled(let peer, _, _),
            .error(let peer, _, _), .otherPaid(let peer, _), .disconnected(let peer), .outcomeFound(let peer, _, _):
            peer
        }
    }

    /// The payment this event ends, if it is a terminal event.
    public var terminalPayment: PaymentID? {
        switch self {
        case .finishedPayment(_, let receipt): receipt.paymentID
        case .cancelled(_, let id, _), .otherPaid(_, let id): id
        case .error(_, let id, _): id
        case .receivedPayment, .disconnected, .outcomeFound: nil
        }
    }
}

/// What the customer machine asks its driver to do.
public enum CustomerAction: Sendable, Hashable {
    case emit(CustomerEvent)
    case send(PeerID, Message)
    /// Build the signed acceptance, bound to this session, from these terms and send it.
    case sendAcceptance(PeerID, PaymentRequest, AcceptanceTerms, PeerSession)
    case disconnect(PeerID)
    case stopAdvertising
    /// Execute this acceptance with the ledger (the business is offline and gave the go-ahead). Asked at most once
    /// per payment; answered with `ledgerAnswered`.
    case execute(PaymentRequest, PaymentAcceptance)
    /// Look up the payment's status at the ledger (after an unknown outcome). Never an execution.
    case lookUpStatus(PaymentID)
    /// The business took this acceptance under a pre-authorization, pending settlement: keep the signed pair and
    /// settle it once the ledger can be reached (whichever side does first; the ledger pays it once).
    case keepForSettlement(PaymentRequest, PaymentAcceptance)
}

/// What the customer chose when accepting: the acceptance's content apart from what the request and session fix.
public struct AcceptanceTerms: Sendable, Hashable {
    public let tipMinorUnits: UInt64
    public let instrumentID: String
    /// True for an instrument delegated by the customer's client; false for one managed by blepay's ledger.
    public let delegatedInstrument: Bool
    public let acceptedAt: Timestamp

    public init(tipMinorUnits: UInt64, instrumentID: String, delegatedInstrument: Bool, acceptedAt: Timestamp) {
        self.tipMinorUnits = tipMinorUnits
        self.instrumentID = instrumentID
        self.delegatedInstrument = delegatedInstrument
        self.acceptedAt = acceptedAt
    }
}
