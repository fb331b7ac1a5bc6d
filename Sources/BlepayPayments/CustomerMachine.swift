import BlepayProtocol

/// The customer's payment state machine: one registration (from `start` to `stop`) receiving any number of
/// payments from any number of businesses, each connection a `PeerID`. A value type: every input returns the
/// actions to carry out, and nothing else happens.
///
/// Requests reach `receive` only after the session layer has checked the merchant's certificate and the request's
/// signature; acceptances leave as `sendAcceptance`, which the driver signs for that session.
public struct CustomerMachine: Sendable {
    enum Phase: Sendable, Hashable {
        case shown
        case accepted
        /// A terminal event was emitted; the id is kept so a repeated message is ignored.
        case ended
    }

    struct Payment: Sendable {
        let request: PaymentRequest
        var phase: Phase
    }

    /// How long after a request's expiry an accepted payment waits for the business's answer.
    public static let answerGraceMilliseconds: UInt64 = 60_000

    public private(set) var isReceiving = false
    private var peers: [PeerID: [PaymentID: Payment]] = [:]
    /// Payments the customer declined, with their expiry: not shown again, even over a new connection.
    private var declined: [PaymentID: Timestamp] = [:]

    public init() {}

    /// Starts the registration: the driver advertises and accepts connections until `stop`.
    public mutating func start() { isReceiving = true }

    /// A business connected and completed the handshake.
    public mutating func connected(_ peer: PeerID) -> [CustomerAction] {
        guard isReceiving else { return [.disconnect(peer)] }
        peers[peer] = peers[peer] ?? [:]
        return []
    }

    public mutating func receive(_ message: Message, from peer: PeerID, at now: Timestamp) -> [CustomerAction] {
        guard isReceiving, peers[peer] != nil else { return [] }
        switch message {
        case .paymentRequest(let request):
            // A repeated, re-offered (after our cancel) or already expired request is not shown again.
            guard peers[peer]![request.paymentID] == nil, declined[request.paymentID] == nil, now < request.expiresAt
            else { return [] }
            peers[peer]![request.paymentID] = Payment(request: request, phase: .shown)
            return [.emit(.receivedPayment(peer, request))]
        case .cancelPayment(let cancel):
            // An expiry is one event whichever side's clock noticed it first.
            let event: CustomerEvent = cancel.reason == .expired
                ? .error(peer, cancel.paymentID, PaymentError(.expired))
                : .cancelled(peer, cancel.paymentID, by: .business)
            return end(cancel.paymentID, of: peer, from: [.shown, .accepted], event)
        case .paymentResult(let result):
            let event: CustomerEvent = switch result.outcome {
            case .finished(let receipt): .finishedPayment(peer, receipt)
            case .failed(let code, let detail): .error(peer, result.paymentID, PaymentError(code, detail))
            }
            return end(result.paymentID, of: peer, from: [.accepted], event)
        case .otherPaid(let other):
            return end(other.paymentID, of: peer, from: [.shown, .accepted], .otherPaid(peer, other.paymentID))
        case .error(let error):
            guard let id = error.paymentID else {
                return [.emit(.error(peer, nil, PaymentError(error.code, error.detail))), .disconnect(peer)]
            }
            return end(id, of: peer, from: [.shown, .accepted], .error(peer, id, PaymentError(error.code, error.detail)))
        case .paymentAcceptance:
            return [.emit(.error(peer, nil, PaymentError(.protocolViolation, "a business sent an acceptance"))),
                .disconnect(peer)]
        }
    }

    /// The customer accepts a shown payment. Amount and currency must be the request's; the tip is added on top.
    public mutating func accept(
        _ paymentID: PaymentID, from peer: PeerID, amount: Money, terms: AcceptanceTerms
    ) throws(PaymentError) -> [CustomerAction] {
        let payment = try shown(paymentID, of: peer)
        guard terms.acceptedAt < payment.request.expiresAt else { throw PaymentError(.expired) }
        guard amount == payment.request.amount else {
            throw PaymentError(.amountMismatch, "accepting \(amount), the request is for \(payment.request.amount)")
        }
        guard terms.tipMinorUnits <= Money.maximumMinorUnits - amount.minorUnits else {
            throw PaymentError(.amountMismatch, "the tip takes the total over the maximum amount")
        }
        guard (try? Text.validateIdentifier(terms.instrumentID, field: "instrument id")) != nil else {
            throw PaymentError(.invalidInstrument, "not an instrument id")
        }
        peers[peer]![paymentID]!.phase = .accepted
        return [.sendAcceptance(peer, payment.request, terms)]
    }

    /// The customer declines a shown payment; it is not shown again, on this connection or another.
    public mutating func cancel(_ paymentID: PaymentID, from peer: PeerID) throws(PaymentError) -> [CustomerAction] {
        let payment = try shown(paymentID, of: peer)
        peers[peer]![paymentID]!.phase = .ended
        declined[paymentID] = payment.request.expiresAt
        return [
            .send(peer, .cancelPayment(CancelPayment(paymentID: paymentID, reason: .userCancelled))),
            .emit(.cancelled(peer, paymentID, by: .customer)),
        ]
    }

    /// Shown payments whose request expired end with `error(expired)`. Accepted ones wait for the business's
    /// verdict, since the ledger, not the clock, decides them; but a business silent for `answerGrace` after the
    /// expiry ends them with `error(outcome-unknown)`, to be looked up by payment id.
    public mutating func tick(at now: Timestamp) -> [CustomerAction] {
        declined = declined.filter { now < $0.value }
        var actions: [CustomerAction] = []
        for peer in peers.keys.sorted() {
            for (id, payment) in peers[peer]!.sorted(by: { $0.key < $1.key }) {
                if payment.phase == .shown, now >= payment.request.expiresAt {
                    actions += end(id, of: peer, from: [.shown], .error(peer, id, PaymentError(.expired)))
                } else if payment.phase == .accepted,
                    now >= payment.request.expiresAt.adding(milliseconds: Self.answerGraceMilliseconds)
                {
                    actions += end(id, of: peer, from: [.accepted], .error(peer, id, PaymentError(
                        .outcomeUnknown, "no answer from the business; look the payment up by its id")))
                }
            }
        }
        return actions
    }

    /// The driver could not sign an acceptance (no usable device key): the payment ends here with that error, and
    /// the business is told the customer withdrew.
    public mutating func acceptanceFailed(_ paymentID: PaymentID, from peer: PeerID, _ error: PaymentError)
        -> [CustomerAction]
    {
        let ended = end(paymentID, of: peer, from: [.accepted], .error(peer, paymentID, error))
        guard !ended.isEmpty else { return [] }
        return [.send(peer, .cancelPayment(CancelPayment(paymentID: paymentID, reason: .userCancelled)))] + ended
    }

    /// The link closed. Open payments end first: not yet accepted, with `connection-failed`; accepted, with
    /// `outcome-unknown` (the business may have executed it; its status is found by payment id). Then
    /// `disconnected`, after which nothing more is said of this peer.
    public mutating func disconnected(_ peer: PeerID) -> [CustomerAction] {
        guard let payments = peers.removeValue(forKey: peer) else { return [] }
        var actions: [CustomerAction] = []
        for (id, payment) in payments.sorted(by: { $0.key < $1.key }) {
            switch payment.phase {
            case .shown:
                actions.append(.emit(.error(peer, id, PaymentError(.connectionFailed, "the business disconnected"))))
            case .accepted:
                actions.append(.emit(.error(peer, id, PaymentError(
                    .outcomeUnknown, "disconnected after accepting; look the payment up by its id"))))
            case .ended: break
            }
        }
        return actions + [.emit(.disconnected(peer))]
    }

    /// Ends the registration: advertising stops and every connection closes, each with its `disconnected`.
    public mutating func stop() -> [CustomerAction] {
        guard isReceiving else { return [] }
        var actions: [CustomerAction] = [.stopAdvertising]
        for peer in peers.keys.sorted() { actions += [.disconnect(peer)] + disconnected(peer) }
        isReceiving = false
        return actions
    }

    private func shown(_ paymentID: PaymentID, of peer: PeerID) throws(PaymentError) -> Payment {
        guard isReceiving, let payment = peers[peer]?[paymentID] else { throw PaymentError(.notFound) }
        switch payment.phase {
        case .shown: return payment
        case .accepted: throw PaymentError(.alreadyPaid, "already accepted")
        case .ended: throw PaymentError(.notFound, "the payment has ended")
        }
    }

    private mutating func end(_ id: PaymentID, of peer: PeerID, from phases: Set<Phase>, _ event: CustomerEvent)
        -> [CustomerAction]
    {
        guard let phase = peers[peer]?[id]?.phase, phases.contains(phase) else { return [] }
        peers[peer]![id]!.phase = .ended
        return [.emit(event)]
    }
}
