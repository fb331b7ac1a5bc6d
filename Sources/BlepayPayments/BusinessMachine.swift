import BlepayProtocol

/// The business's payment state machine. Each open request is offered to every connected customer, and to those
/// who connect while it is open; the first valid acceptance is executed once; the winner gets the result and every
/// other customer `otherPaid`. A refusal that concerns only the payer (its funds, instrument, key) fails that
/// acceptance alone and the request stays open for everyone else; only one that concerns the request ends it. A
/// value type: every input returns the actions to carry out. It is also the one record of each payment.
public struct BusinessMachine: Sendable {
    enum Phase: Sendable, Equatable {
        case open
        /// `pending`: the ledger's answer was unknown and a status look-up is under way.
        case executing(winner: PeerID, acceptance: PaymentAcceptance, pending: Bool)
        /// `reason`: what a late acceptance is told (`already-paid`, `user-cancelled`, `expired`, or the refusal).
        case ended(reason: PaymentErrorCode, status: PaymentStatus)
    }

    struct Payment: Sendable {
        let request: PaymentRequest
        var phase: Phase = .open
        /// Connected customers it was sent to who have not ended it.
        var offered: Set<PeerID> = []
        /// Connected customers who declined it or whose acceptance was refused: not offered it again.
        var declined: Set<PeerID> = []
        /// The winner and its result, kept to answer a repeated acceptance with the same result.
        var result: (winner: PeerID, message: Message)?
        var receipt: Receipt?

        init(request: PaymentRequest) { self.request = request }
    }

    private let verifier: any AcceptanceVerifier
    /// What is taken offline, for requests signed while the ledger could not be reached; nil: nothing is.
    private let offline: OfflinePolicy?
    /// The largest tip accepted, in percent of the amount: a guard against a mistyped tip.
    private let maximumTipPercent: UInt64
    private var peers: [PeerID: PeerSession] = [:]
    private var payments = PaymentRecords<Payment>(capacity: 1000) {
        if case .ended = $0.phase { true } else { false }
    }

    public init(
        verifier: any AcceptanceVerifier = SignatureVerifier(), offline: OfflinePolicy? = nil, maximumTipPercent: UInt64 = 100
    ) {
        self.verifier = verifier
        self.offline = offline
        self.maximumTipPercent = min(maximumTipPercent, 10_000)
    }

    /// A customer connected and completed the handshake: open requests are offered to it.
    public mutating func connected(_ peer: PeerID, _ session: PeerSession, at now: Timestamp) -> [BusinessAction] {
        guard peers.updateValue(session, forKey: peer) == nil else { return [] }
        var actions: [BusinessAction] = []
        for id in openIDs(at: now) { actions += offer(id, to: peer) }
        return actions
    }

    /// The link closed. The customer leaves every offer; a payment it won stays with the ledger.
    public mutating func disconnected(_ peer: PeerID) {
        guard peers.removeValue(forKey: peer) != nil else { return }
        for payment in payments.newestFirst where payment.offered.contains(peer) || payment.declined.contains(peer) {
            payments[payment.request.paymentID]?.offered.remove(peer)
            payments[payment.request.paymentID]?.declined.remove(peer)
        }
    }

    /// Opens a request (signed by the driver with the merchant key) and offers it to every connected customer.
    public mutating func request(_ request: PaymentRequest, at now: Timestamp) throws(PaymentError) -> [BusinessAction] {
        guard payments[request.paymentID] == nil else { throw PaymentError(.alreadyPaid, "the payment id is in use") }
        guard now < request.expiresAt else { throw PaymentError(.expired) }
        payments.begin(request.paymentID, Payment(request: request))
        var actions: [BusinessAction] = []
        for peer in peers.keys.sorted() { actions += offer(request.paymentID, to: peer) }
        return actions
    }

    /// Withdraws an open request from every customer (fire and forget). One being executed is the ledger's.
    public mutating func cancel(_ id: PaymentID) throws(PaymentError) -> [BusinessAction] {
        guard let payment = payments[id] else { throw PaymentError(.notFound) }
        switch payment.phase {
        case .open:
            return close(id, .userCancelled, .cancelled,
                telling: .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)), event: .cancelled(id))
        case .executing: throw PaymentError(.alreadyPaid, "the payment is being executed")
        case .ended: throw PaymentError(.notFound, "the payment has ended")
        }
    }

    public mutating func receive(_ message: Message, from peer: PeerID, at now: Timestamp) -> [BusinessAction] {
        guard peers[peer] != nil else { return [] }
        switch message {
        case .paymentAcceptance(let acceptance):
            return accept(acceptance, from: peer, at: now)
        case .cancelPayment(let cancel):
            return leave(cancel.paymentID, peer, event: .declined(cancel.paymentID, by: peer))
        case .error(let error):
            // A customer that could not take a request (its clock is off, say) leaves it, and the business hears why.
            guard let id = error.paymentID else { return [] }
            return leave(id, peer, event: .customerRefused(id, by: peer, PaymentError(error.code, error.detail)))
        case .paymentRequest, .paymentResult, .otherPaid:
            // A result from an online customer executing for an offline business is the offline flow's; the
            // rest is not a customer's to send.
            return []
        }
    }

    /// The ledger answered an execution or a status look-up.
    public mutating func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome, at now: Timestamp) -> [BusinessAction] {
        guard var payment = payments[id], case .executing(let winner, let acceptance, let pending) = payment.phase
        else { return [] }
        switch outcome {
        case .executed(let receipt):
            guard receipt.paymentID == id, receipt.amount == acceptance.amount,
                receipt.tipMinorUnits == acceptance.tipMinorUnits,
                let result = try? PaymentResult(paymentID: id, outcome: .finished(receipt))
            else {
                // Not this payment's receipt: no result can be claimed from it; the status is looked up instead.
                return ledgerAnswered(id, .unknown("the ledger's receipt is not this payment's"), at: now)
            }
            payment.offered.remove(winner)
            payment.result = (winner, .paymentResult(result))
            payment.receipt = receipt
            payments[id] = payment
            let toWinner: [BusinessAction] = peers[winner] != nil ? [.send(winner, .paymentResult(result))] : []
            return toWinner + close(id, .alreadyPaid, .finished, telling: .otherPaid(OtherPaid(paymentID: id)),
                event: .finished(id, by: winner, receipt))
        case .notExecuted(let error) where error.code.concernsPayer:
            payment.phase = .open
            payment.offered.remove(winner)
            payment.declined.insert(winner)
            payments[id] = payment
            let told: [BusinessAction] = peers[winner] != nil ? [.send(winner, Self.failure(id, error.code))] : []
            return told + [.emit(.acceptanceRefused(id, by: winner, error))] + tick(at: now)
        case .notExecuted(let error):
            // The others learn only that the request was withdrawn: why the winner's payment failed is the winner's.
            let result = Self.failure(id, error.code)
            payment.offered.remove(winner)
            payment.result = (winner, result)
            payments[id] = payment
            let toWinner: [BusinessAction] = peers[winner] != nil ? [.send(winner, result)] : []
            return toWinner + close(id, .userCancelled, .failed(error.code),
                telling: .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)),
                event: .failed(id, by: winner, error))
        case .unknown:
            payment.phase = .executing(winner: winner, acceptance: acceptance, pending: true)
            payments[id] = payment
            return (pending ? [] : [.emit(.outcomePending(id))]) + [.lookUpStatus(id)]
        }
    }

    /// Open requests past their expiry end with `expired`.
    public mutating func tick(at now: Timestamp) -> [BusinessAction] {
        var actions: [BusinessAction] = []
        for payment in payments.newestFirst.reversed() where payment.phase == .open && now >= payment.request.expiresAt {
            let id = payment.request.paymentID
            actions += close(id, .expired, .expired,
                telling: .cancelPayment(CancelPayment(paymentID: id, reason: .expired)), event: .expired(id))
        }
        return actions
    }

    /// The daemon is stopping: every open request is withdrawn (its customers told); payments being executed go on
    /// until the ledger answers, which `hasUnended` waits for.
    public mutating func shutdown() -> [BusinessAction] {
        payments.newestFirst.filter { $0.phase == .open }.flatMap { (try? cancel($0.request.paymentID)) ?? [] }
    }

    /// Whether a payment is open or being executed.
    public var hasUnended: Bool { payments.newestFirst.contains { if case .ended = $0.phase { false } else { true } } }

    /// A payment this business requested.
    public func snapshot(of id: PaymentID) -> PaymentSnapshot? { payments[id].map(Self.snapshot) }

    /// The payments requested, newest first.
    public var snapshots: [PaymentSnapshot] { payments.newestFirst.map(Self.snapshot) }

    private static func snapshot(_ payment: Payment) -> PaymentSnapshot {
        switch payment.phase {
        case .open:
            PaymentSnapshot(request: payment.request, peer: nil, status: .open, receipt: nil)
        case .executing(let winner, _, _):
            PaymentSnapshot(request: payment.request, peer: winner, status: .accepted, receipt: nil)
        case .ended(_, let status):
            PaymentSnapshot(request: payment.request, peer: payment.result?.winner, status: status, receipt: payment.receipt)
        }
    }

    private static func failure(_ id: PaymentID, _ code: PaymentErrorCode) -> Message {
        // A payment id and a code from the taxonomy always make a valid result.
        (try? PaymentResult(paymentID: id, outcome: .failed(code, detail: nil))).map(Message.paymentResult)
            ?? .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled))
    }

    private func openIDs(at now: Timestamp) -> [PaymentID] {
        payments.newestFirst.filter { $0.phase == .open && now < $0.request.expiresAt }.map(\.request.paymentID).sorted()
    }

    private mutating func offer(_ id: PaymentID, to peer: PeerID) -> [BusinessAction] {
        guard var payment = payments[id], !payment.declined.contains(peer) else { return [] }
        payment.offered.insert(peer)
        payments[id] = payment
        return [.send(peer, .paymentRequest(payment.request)), .emit(.offered(id, peer))]
    }

    /// A customer leaves an offer it was given; one it won stays with the ledger.
    private mutating func leave(_ id: PaymentID, _ peer: PeerID, event: BusinessEvent) -> [BusinessAction] {
        guard var payment = payments[id], payment.offered.contains(peer) else { return [] }
        if case .executing(let winner, _, _) = payment.phase, winner == peer { return [] }
        payment.offered.remove(peer)
        payment.declined.insert(peer)
        payments[id] = payment
        return [.emit(event)]
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
        case .ended(let reason, _):
            // The winner asking again (its result was lost) gets the same result: acceptances are idempotent.
            if let result = payment.result, result.winner == peer { return [.send(peer, result.message)] }
            return refuse(id, peer, PaymentError(reason, "the payment has ended"))
        case .open:
            break
        }
        guard payment.offered.contains(peer), let session = peers[peer] else {
            return refuse(id, peer, PaymentError(.notFound, "the payment was not offered on this connection"))
        }
        guard now < payment.request.expiresAt else {
            return tick(at: now) + refuse(id, peer, PaymentError(.expired))
        }
        guard acceptance.amount == payment.request.amount else {
            return refuseForGood(id, peer, PaymentError(.amountMismatch, "accepted \(acceptance.amount)"))
        }
        // Amounts are at most 10^15 and the percentage at most 10,000: the product fits in 64 bits.
        guard acceptance.tipMinorUnits <= payment.request.amount.minorUnits * maximumTipPercent / 100 else {
            return refuseForGood(id, peer, PaymentError(.amountMismatch, "a tip over \(maximumTipPercent)% of the amount"))
        }
        if let error = verifier.verify(acceptance, of: payment.request, session: session) {
            return refuseForGood(id, peer, error)
        }
        // The signed request says who executes: the ledger through this business, or (offline) the queue.
        let execution: BusinessAction
        if payment.request.businessOnline {
            guard acceptance.preAuthorization == nil else {
                return refuseForGood(id, peer, PaymentError(.preAuthorizationInvalid, "an online request is paid online"))
            }
            execution = .execute(payment.request, acceptance)
        } else {
            guard let offline else {
                return refuseForGood(id, peer, PaymentError(.ledgerOffline, "this business takes no offline payments"))
            }
            if let error = offline.verify(acceptance, of: payment.request) { return refuseForGood(id, peer, error) }
            execution = .queue(payment.request, acceptance)
        }
        payments[id]?.phase = .executing(winner: peer, acceptance: acceptance, pending: false)
        return [.emit(.accepted(id, by: peer, total: acceptance.total)), execution]
    }

    /// Refuses an acceptance that cannot be mended on this connection: the customer hears a failed result and is
    /// not offered the request again; the request stays open for the others.
    private mutating func refuseForGood(_ id: PaymentID, _ peer: PeerID, _ error: PaymentError) -> [BusinessAction] {
        payments[id]?.offered.remove(peer)
        payments[id]?.declined.insert(peer)
        return [.send(peer, Self.failure(id, error.code)), .emit(.acceptanceRefused(id, by: peer, error))]
    }

    /// Tells one customer its acceptance was refused.
    private func refuse(_ id: PaymentID, _ peer: PeerID, _ error: PaymentError) -> [BusinessAction] {
        let notice = (try? ErrorMessage(code: error.code, paymentID: id, detail: nil)).map { [BusinessAction.send(peer, .error($0))] }
        return (notice ?? []) + [.emit(.acceptanceRefused(id, by: peer, error))]
    }

    /// Ends a payment: every customer still offered it gets `message`.
    private mutating func close(
        _ id: PaymentID, _ reason: PaymentErrorCode, _ status: PaymentStatus, telling message: Message,
        event: BusinessEvent
    ) -> [BusinessAction] {
        guard var payment = payments[id] else { return [] }
        let offered = payment.offered.sorted()
        payment.offered = []
        payment.phase = .ended(reason: reason, status: status)
        payments[id] = payment
        return offered.map { .send($0, message) } + [.emit(event)]
    }
}

extension PaymentErrorCode {
    /// Whether a ledger refusal concerns only the customer who accepted (its funds, instrument, account, key or
    /// signature), so that another customer may still pay the request.
    public var concernsPayer: Bool {
        switch self {
        case .rejected, .insufficientFunds, .limitExceeded, .invalidInstrument, .invalidCredentials, .blocked,
            .preAuthorizationInvalid, .amountMismatch, .securityFailure:
            true
        default:
            false
        }
    }
}
