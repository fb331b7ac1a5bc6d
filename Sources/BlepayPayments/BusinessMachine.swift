import BlepayProtocol

/// The business's payment state machine. Each open request is offered to every connected customer, and to those
/// who connect while it is open; the first valid acceptance wins and is executed once; the winner gets the
/// result and every other customer `otherPaid` (or the cancellation, if the ledger refused). A value type: every
/// input returns the actions to carry out.
public struct BusinessMachine: Sendable {
    enum Phase: Sendable, Equatable {
        case open
        /// `pending`: the ledger's answer was unknown and a status look-up is under way.
        case executing(winner: PeerID, acceptance: PaymentAcceptance, pending: Bool)
        /// `reason`: what a late acceptance is told (`already-paid`, `user-cancelled`, `expired`, or the refusal).
        case ended(reason: PaymentErrorCode)
    }

    struct Payment: Sendable {
        let request: PaymentRequest
        var phase: Phase = .open
        /// Connected customers it was sent to who have not ended it.
        var offered: Set<PeerID> = []
        var declined: Set<PeerID> = []
        /// The winner and its result, kept to answer a repeated acceptance with the same result.
        var result: (winner: PeerID, message: Message)?
    }

    /// How long an ended payment is remembered after it expires, to answer late messages precisely.
    static let retentionMilliseconds: UInt64 = 10 * 60 * 1000

    private let verifier: any AcceptanceVerifier
    /// The largest tip accepted, in percent of the amount: a guard against a mistyped tip.
    private let maximumTipPercent: UInt64
    private var peers: Set<PeerID> = []
    private var payments: [PaymentID: Payment] = [:]

    public init(verifier: any AcceptanceVerifier, maximumTipPercent: UInt64 = 100) {
        self.verifier = verifier
        self.maximumTipPercent = min(maximumTipPercent, 10_000)
    }

    /// A customer connected and completed the handshake: open requests are offered to it.
    public mutating func connected(_ peer: PeerID, at now: Timestamp) -> [BusinessAction] {
        guard peers.insert(peer).inserted else { return [] }
        var actions: [BusinessAction] = []
        for id in openIDs(at: now) { actions += offer(id, to: peer) }
        return actions
    }

    /// The link closed. The customer leaves every offer; a payment it won stays with the ledger.
    public mutating func disconnected(_ peer: PeerID) {
        peers.remove(peer)
        for id in payments.keys { payments[id]!.offered.remove(peer) }
    }

    /// Opens a request (signed by the driver with the merchant key) and offers it to every connected customer.
    public mutating func request(_ request: PaymentRequest, at now: Timestamp) throws(PaymentError) -> [BusinessAction] {
        guard payments[request.paymentID] == nil else { throw PaymentError(.alreadyPaid, "the payment id is in use") }
        guard now < request.expiresAt else { throw PaymentError(.expired) }
        payments[request.paymentID] = Payment(request: request)
        var actions: [BusinessAction] = []
        for peer in peers.sorted() { actions += offer(request.paymentID, to: peer) }
        return actions
    }

    /// Withdraws an open request from every customer (fire and forget). One being executed is the ledger's.
    public mutating func cancel(_ id: PaymentID) throws(PaymentError) -> [BusinessAction] {
        guard let payment = payments[id] else { throw PaymentError(.notFound) }
        switch payment.phase {
        case .open: return close(id, .userCancelled, telling: .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)),
            event: .cancelled(id))
        case .executing: throw PaymentError(.alreadyPaid, "the payment is being executed")
        case .ended: throw PaymentError(.notFound, "the payment has ended")
        }
    }

    public mutating func receive(_ message: Message, from peer: PeerID, at now: Timestamp) -> [BusinessAction] {
        guard peers.contains(peer) else { return [] }
        switch message {
        case .paymentAcceptance(let acceptance):
            return accept(acceptance, from: peer, at: now)
        case .cancelPayment(let cancel):
            guard var payment = payments[cancel.paymentID], payment.offered.contains(peer) else { return [] }
            if case .executing(let winner, _, _) = payment.phase, winner == peer { return [] }  // the ledger decides
            payment.offered.remove(peer)
            payment.declined.insert(peer)
            payments[cancel.paymentID] = payment
            return [.emit(.declined(cancel.paymentID, by: peer))]
        case .paymentRequest, .paymentResult, .otherPaid, .error:
            // A result from an online customer executing for an offline business is the offline flow's; the
            // rest is not a customer's to send.
            return []
        }
    }

    /// The ledger answered an execution or a status look-up.
    public mutating func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome, at now: Timestamp) -> [BusinessAction] {
        guard var payment = payments[id], case .executing(let winner, let acceptance, let pending) = payment.phase
        else { return [] }
        let ending: (result: PaymentResult.Outcome, reason: PaymentErrorCode, others: Message, event: BusinessEvent)
        switch outcome {
        case .executed(let receipt):
            ending = (.finished(receipt), .alreadyPaid, .otherPaid(OtherPaid(paymentID: id)), .finished(id, by: winner, receipt))
        case .notExecuted(let error):
            // The others learn only that the request was withdrawn: why the winner's payment failed is the winner's.
            ending = (.failed(error.code, detail: nil), .userCancelled,
                .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)), .failed(id, by: winner, error))
        case .unknown:
            payment.phase = .executing(winner: winner, acceptance: acceptance, pending: true)
            payments[id] = payment
            return (pending ? [] : [.emit(.outcomePending(id))]) + [.lookUpStatus(id)]
        }
        let result = Message.paymentResult(try! PaymentResult(paymentID: id, outcome: ending.result))
        payment.offered.remove(winner)
        payment.result = (winner, result)
        payments[id] = payment
        let toWinner: [BusinessAction] = peers.contains(winner) ? [.send(winner, result)] : []
        return toWinner + close(id, ending.reason, telling: ending.others, event: ending.event)
    }

    /// Open requests past their expiry end with `expired`; ended ones are forgotten once past retention.
    public mutating func tick(at now: Timestamp) -> [BusinessAction] {
        var actions: [BusinessAction] = []
        for (id, payment) in payments.sorted(by: { $0.key < $1.key }) {
            if payment.phase == .open, now >= payment.request.expiresAt {
                actions += close(id, .expired, telling: .cancelPayment(CancelPayment(paymentID: id, reason: .expired)),
                    event: .expired(id))
            } else if case .ended = payment.phase,
                now >= payment.request.expiresAt.adding(milliseconds: Self.retentionMilliseconds)
            {
                payments[id] = nil
            }
        }
        return actions
    }

    private func openIDs(at now: Timestamp) -> [PaymentID] {
        payments.filter { $0.value.phase == .open && now < $0.value.request.expiresAt }.keys
            .sorted()
    }

    private mutating func offer(_ id: PaymentID, to peer: PeerID) -> [BusinessAction] {
        guard payments[id]?.declined.contains(peer) == false else { return [] }
        payments[id]!.offered.insert(peer)
        return [.send(peer, .paymentRequest(payments[id]!.request)), .emit(.offered(id, peer))]
    }

    private mutating func accept(_ acceptance: PaymentAcceptance, from peer: PeerID, at now: Timestamp)
        -> [BusinessAction]
    {
        let id = acceptance.paymentID
        guard let payment = payments[id] else { return refuse(id, peer, PaymentError(.notFound)) }
        switch payment.phase {
        case .executing:
            // A repeat from the winner waits for the ledger like the first; anyone else hears `otherPaid` or the
            // withdrawal when the payment ends.
            return []
        case .ended(let reason):
            // The winner asking again (its result was lost) gets the same result: acceptances are idempotent.
            if let result = payment.result, result.winner == peer { return [.send(peer, result.message)] }
            return refuse(id, peer, PaymentError(reason, "the payment has ended"))
        case .open:
            break
        }
        guard payment.offered.contains(peer) else {
            return refuse(id, peer, PaymentError(.notFound, "the payment was not offered on this connection"))
        }
        guard now < payment.request.expiresAt else {
            return tick(at: now) + refuse(id, peer, PaymentError(.expired))
        }
        guard acceptance.amount == payment.request.amount else {
            payments[id]!.offered.remove(peer)
            return refuse(id, peer, PaymentError(.amountMismatch, "accepted \(acceptance.amount)"), result: true)
        }
        // Amounts are at most 10^15 and the percentage at most 10,000: the product fits in 64 bits.
        guard acceptance.tipMinorUnits <= payment.request.amount.minorUnits * maximumTipPercent / 100 else {
            payments[id]!.offered.remove(peer)
            return refuse(id, peer, PaymentError(.amountMismatch, "a tip over \(maximumTipPercent)% of the amount"), result: true)
        }
        if let error = verifier.verify(acceptance, of: payment.request, from: peer) {
            payments[id]!.offered.remove(peer)
            return refuse(id, peer, error, result: true)
        }
        payments[id]!.phase = .executing(winner: peer, acceptance: acceptance, pending: false)
        return [.emit(.accepted(id, by: peer, total: acceptance.total)), .execute(payment.request, acceptance)]
    }

    /// Tells one customer its acceptance was refused: by a failed result when the refusal ends the payment for it.
    private func refuse(_ id: PaymentID, _ peer: PeerID, _ error: PaymentError, result: Bool = false) -> [BusinessAction] {
        let message: Message = result
            ? .paymentResult(try! PaymentResult(paymentID: id, outcome: .failed(error.code, detail: nil)))
            : .error(try! ErrorMessage(code: error.code, paymentID: id, detail: nil))
        return [.send(peer, message), .emit(.acceptanceRefused(id, by: peer, error))]
    }

    /// Ends a payment: every customer still offered it gets `message`.
    private mutating func close(_ id: PaymentID, _ reason: PaymentErrorCode, telling message: Message, event: BusinessEvent)
        -> [BusinessAction]
    {
        let offered = payments[id]!.offered.sorted()
        payments[id]!.offered = []
        payments[id]!.phase = .ended(reason: reason)
        return offered.map { .send($0, message) } + [.emit(event)]
    }
}
