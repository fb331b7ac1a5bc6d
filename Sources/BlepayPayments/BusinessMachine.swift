import BlepayProtocol

/// The business's payment state machine. Each open request is offered to every connected customer, and to those
/// who connect while it is open; the first valid acceptance is executed once; the winner gets the result and every
/// other customer `otherPaid`. A refusal that concerns only the payer (its funds, instrument, key) fails that
/// acceptance alone and the request stays open for everyone else; only one that concerns the request ends it.
///
/// Who executes is decided once per payment, from what both sides signed (`docs/offline.md`): a request signed
/// online is executed by the business; an offline one by the winning customer, after the business's go-ahead, when
/// its acceptance is a plain one (it can reach the ledger), or kept for settlement when it presents a
/// pre-authorization. A value type: every input returns the actions to carry out. It is also the one record of
/// each payment.
public struct BusinessMachine: Sendable {
    enum Phase: Sendable, Equatable {
        case open
        /// `pending`: the ledger's answer was unknown and a status look-up is under way.
        case executing(winner: PeerID, acceptance: PaymentAcceptance, pending: Bool)
        /// An offline request the winner executes: it was sent the go-ahead and owes the ledger-signed receipt.
        case customerExecuting(winner: PeerID, acceptance: PaymentAcceptance)
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
        /// The winner, its acceptance's hash and its result, kept to answer a repeated acceptance or the winner's
        /// query from a new connection with the same result.
        var result: (winner: PeerID, acceptanceHash: Hash32, message: Message)?
        var receipt: Receipt?

        init(request: PaymentRequest) { self.request = request }
    }

    /// How long past a request's expiry the winner of an offline request may take to bring the receipt, before
    /// the outcome is taken as unknown and looked up at the ledger.
    public static let customerAnswerGraceMilliseconds: UInt64 = 60_000

    private let verifier: any AcceptanceVerifier
    /// What is taken offline, for requests signed while the ledger could not be reached; nil: nothing is.
    private let offline: OfflinePolicy?
    /// The ledger keys a receipt brought by a customer must be signed with; nil: no customer executes.
    private let ledgerKeys: TrustedLedgerKeys?
    /// The newest deny list from the ledger, what offline acceptances are checked against.
    private var denyList: DenyList?
    /// The largest tip accepted, in percent of the amount: a guard against a mistyped tip.
    private let maximumTipPercent: UInt64
    private var peers: [PeerID: PeerSession] = [:]
    private var payments = PaymentRecords<Payment>(capacity: 1000) {
        if case .ended = $0.phase { true } else { false }
    }

    public init(
        verifier: any AcceptanceVerifier = SignatureVerifier(), offline: OfflinePolicy? = nil,
        ledgerKeys: TrustedLedgerKeys? = nil, maximumTipPercent: UInt64 = 100
    ) {
        self.verifier = verifier
        self.offline = offline
        self.ledgerKeys = ledgerKeys
        self.maximumTipPercent = min(maximumTipPercent, 10_000)
    }

    /// A customer connected and completed the handshake: open requests are offered to it.
    public mutating func connected(_ peer: PeerID, _ session: PeerSession, at now: Timestamp) -> [BusinessAction] {
        guard peers.updateValue(session, forKey: peer) == nil else { return [] }
        var actions: [BusinessAction] = []
        for id in openIDs(at: now) { actions += offer(id, to: peer) }
        return actions
    }

    /// The link closed. The customer leaves every offer; a payment it won stays with the ledger, and one it was
    /// executing is looked up there, since it may have been paid.
    public mutating func disconnected(_ peer: PeerID) -> [BusinessAction] {
        guard peers.removeValue(forKey: peer) != nil else { return [] }
        var actions: [BusinessAction] = []
        for payment in payments.newestFirst where payment.offered.contains(peer) || payment.declined.contains(peer) {
            let id = payment.request.paymentID
            payments[id]?.offered.remove(peer)
            payments[id]?.declined.remove(peer)
        }
        for payment in payments.newestFirst {
            if case .customerExecuting(peer, _) = payment.phase { actions += lookUp(payment.request.paymentID) }
        }
        return actions
    }

    /// A deny list from the ledger (fetched, or kept from before): the newest one is used from now on.
    public mutating func denyListReceived(_ list: DenyList) {
        if list.supersedes(denyList) { denyList = list }
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
        case .executing, .customerExecuting: throw PaymentError(.alreadyPaid, "the payment is being executed")
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
        case .paymentResult(let result):
            return executedByCustomer(result, from: peer, at: now)
        case .resultQuery(let query):
            return answer(query, from: peer)
        case .paymentRequest, .otherPaid, .goAhead:
            return []
        }
    }

    /// The ledger answered an execution or a status look-up.
    public mutating func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome, at now: Timestamp) -> [BusinessAction] {
        conclude(id, outcome, toldByWinner: false, at: now)
    }

    /// Ends an execution with its outcome; the winner is sent the result unless it is the one who told it.
    private mutating func conclude(_ id: PaymentID, _ outcome: LedgerOutcome, toldByWinner: Bool, at now: Timestamp)
        -> [BusinessAction]
    {
        guard var payment = payments[id], case .executing(let winner, let acceptance, let pending) = payment.phase
        else { return [] }
        let tellWinner = peers[winner] != nil && !toldByWinner
        switch outcome {
        case .executed(let receipt):
            guard receipt.paymentID == id, receipt.amount == acceptance.amount,
                receipt.tipMinorUnits == acceptance.tipMinorUnits,
                // With ledger keys, only a receipt one of them signed for this payer and total is payment (a pending one
                // is this business's own acknowledgement of what it kept).
                receipt.status == .pendingSettlement
                    || ledgerKeys.map({ (try? receipt.verify(paying: payment.request, with: acceptance, trusting: $0)) != nil }) ?? true,
                let result = try? PaymentResult(paymentID: id, outcome: .finished(receipt))
            else {
                // Not this payment's receipt: no result can be claimed from it; the status is looked up instead.
                return ledgerAnswered(id, .unknown("the ledger's receipt is not this payment's"), at: now)
            }
            payment.offered.remove(winner)
            payment.result = (winner, acceptance.hash, .paymentResult(result))
            payment.receipt = receipt
            payments[id] = payment
            let toWinner: [BusinessAction] = tellWinner ? [.send(winner, .paymentResult(result))] : []
            return toWinner + close(id, .alreadyPaid, .finished, telling: .otherPaid(OtherPaid(paymentID: id)),
                event: .finished(id, by: winner, receipt))
        case .notExecuted(let error) where error.code.concernsPayer:
            return reopen(id, refusing: winner, error, tell: tellWinner, at: now)
        case .notExecuted(let error):
            // The others learn only that the request was withdrawn: why the winner's payment failed is the winner's.
            let result = Self.failure(id, error.code)
            payment.offered.remove(winner)
            payment.result = (winner, acceptance.hash, result)
            payments[id] = payment
            let toWinner: [BusinessAction] = tellWinner ? [.send(winner, result)] : []
            return toWinner + close(id, .userCancelled, .failed(error.code),
                telling: .cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)),
                event: .failed(id, by: winner, error))
        case .unknown:
            return pending ? [.lookUpStatus(id)] : lookUp(id)
        }
    }

    /// Open requests past their expiry end with `expired`; a winner executing an offline request that has not
    /// brought its receipt within the grace after the expiry leaves the outcome to a look-up at the ledger.
    public mutating func tick(at now: Timestamp) -> [BusinessAction] {
        var actions: [BusinessAction] = []
        for payment in payments.newestFirst.reversed() where now >= payment.request.expiresAt {
            let id = payment.request.paymentID
            if payment.phase == .open {
                actions += close(id, .expired, .expired,
                    telling: .cancelPayment(CancelPayment(paymentID: id, reason: .expired)), event: .expired(id))
            } else if case .customerExecuting = payment.phase,
                now >= payment.request.expiresAt.adding(milliseconds: Self.customerAnswerGraceMilliseconds)
            {
                actions += lookUp(id)
            }
        }
        return actions
    }

    /// The earliest instant at which `tick` has something to end (an open request's expiry, or the grace of a
    /// winner executing an offline request); nil when nothing waits on the clock, so that an idle driver sleeps.
    public var nextDeadline: Timestamp? {
        payments.newestFirst.compactMap { payment -> Timestamp? in
            switch payment.phase {
            case .open: payment.request.expiresAt
            case .customerExecuting: payment.request.expiresAt.adding(milliseconds: Self.customerAnswerGraceMilliseconds)
            case .executing, .ended: nil
            }
        }.min()
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
        case .executing(let winner, _, _), .customerExecuting(let winner, _):
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
        switch payment.phase {
        case .executing(peer, _, _), .customerExecuting(peer, _): return []
        default: break
        }
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
        case .executing, .customerExecuting:
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
        // The signed request and acceptance say who executes: the ledger through this business; (offline) the
        // customer, who can reach the ledger; or, under a pre-authorization, nobody until settlement.
        let execution: BusinessAction
        if payment.request.businessOnline {
            guard acceptance.preAuthorization == nil else {
                return refuseForGood(id, peer, PaymentError(.preAuthorizationInvalid, "an online request is paid online"))
            }
            execution = .execute(payment.request, acceptance)
        } else if acceptance.preAuthorization == nil {
            guard ledgerKeys != nil else {
                return refuseForGood(id, peer, PaymentError(.ledgerOffline, "this business cannot check a customer's receipt"))
            }
            payments[id]?.phase = .customerExecuting(winner: peer, acceptance: acceptance)
            return [.emit(.accepted(id, by: peer, total: acceptance.total)),
                .send(peer, .goAhead(GoAhead(paymentID: id, acceptanceHash: acceptance.hash)))]
        } else {
            guard let offline else {
                return refuseForGood(id, peer, PaymentError(.ledgerOffline, "this business takes no offline payments"))
            }
            if let error = offline.verify(acceptance, of: payment.request, denyList: denyList, at: now) {
                return refuseForGood(id, peer, error)
            }
            execution = .queue(payment.request, acceptance)
        }
        payments[id]?.phase = .executing(winner: peer, acceptance: acceptance, pending: false)
        return [.emit(.accepted(id, by: peer, total: acceptance.total)), execution]
    }

    /// The winner lost its link before the result and asks again over a new one, naming its acceptance by hash
    /// (which only it and this business hold). It gets the result if there is one; while the ledger has not answered,
    /// the result will go to this connection instead of the lost one. Anyone else is not answered.
    private mutating func answer(_ query: ResultQuery, from peer: PeerID) -> [BusinessAction] {
        // A payment no longer held here may have been kept for settlement before a restart: it is on disk.
        guard let payment = payments[query.paymentID] else { return offline == nil ? [] : [.recall(query, from: peer)] }
        if let result = payment.result, result.acceptanceHash == query.acceptanceHash { return [.send(peer, result.message)] }
        guard case .executing(let winner, let acceptance, let pending) = payment.phase,
            acceptance.hash == query.acceptanceHash, peers[winner] == nil
        else { return [] }
        payments[query.paymentID]?.phase = .executing(winner: peer, acceptance: acceptance, pending: pending)
        return []
    }

    /// What was kept for settlement under a queried payment id, with the merchant's acknowledgement signed again:
    /// the kept payment's result is sent to the asker if it holds that acceptance, as before the restart.
    public func recalled(_ kept: KeptPayment, acknowledgement: Receipt, for query: ResultQuery, from peer: PeerID)
        -> [BusinessAction]
    {
        guard peers[peer] != nil, payments[query.paymentID] == nil, kept.request.paymentID == query.paymentID,
            kept.acceptance.hash == query.acceptanceHash, acknowledgement.paymentID == query.paymentID,
            acknowledgement.status == .pendingSettlement,
            let result = try? PaymentResult(paymentID: query.paymentID, outcome: .finished(acknowledgement))
        else { return [] }
        return [.send(peer, .paymentResult(result))]
    }

    /// The winner of an offline request reports how its execution went. A receipt counts only if it verifies with
    /// the ledger keys held here, for this request, merchant, payer and total; a failure is the payer's unless it
    /// ends the request (paid, expired, cancelled at the ledger); an unknown outcome is looked up by id.
    private mutating func executedByCustomer(_ result: PaymentResult, from peer: PeerID, at now: Timestamp)
        -> [BusinessAction]
    {
        let id = result.paymentID
        guard let payment = payments[id] else { return [] }
        if case .executing(_, let acceptance, pending: true) = payment.phase, !payment.request.businessOnline,
            acceptance.preAuthorization == nil, case .finished(let receipt) = result.outcome
        {
            // The winner's link went before its receipt came: it brings it over a new connection (§6.4b). The
            // ledger's signature over this acceptance's payer and amounts proves it, whoever carries it.
            let trusted = ledgerKeys ?? TrustedLedgerKeys([])
            guard (try? receipt.verify(paying: payment.request, with: acceptance, trusting: trusted)) != nil else { return [] }
            return conclude(id, .executed(receipt), toldByWinner: true, at: now)
        }
        guard case .customerExecuting(peer, let acceptance) = payment.phase else { return [] }
        payments[id]?.phase = .executing(winner: peer, acceptance: acceptance, pending: false)
        switch result.outcome {
        case .finished(let receipt):
            do throws(ProtocolError) {
                try receipt.verify(paying: payment.request, with: acceptance, trusting: ledgerKeys ?? TrustedLedgerKeys([]))
            } catch {
                return conclude(id, .notExecuted(PaymentError(.securityFailure, "the customer's receipt: \(error.message)")),
                    toldByWinner: false, at: now)
            }
            return conclude(id, .executed(receipt), toldByWinner: true, at: now)
        case .failed(.outcomeUnknown, _):
            return lookUp(id)
        case .failed(let code, let detail) where [.alreadyPaid, .expired, .userCancelled].contains(code):
            return conclude(id, .notExecuted(PaymentError(code, detail)), toldByWinner: true, at: now)
        case .failed(let code, let detail):
            // Told by the customer, not the ledger: anything but the request's own end is the payer's failure.
            return reopen(id, refusing: peer, PaymentError(code, detail), tell: false, at: now)
        }
    }

    /// The winner's payment failed for a reason of its own: the request is open again for everyone else.
    private mutating func reopen(_ id: PaymentID, refusing winner: PeerID, _ error: PaymentError, tell: Bool,
        at now: Timestamp) -> [BusinessAction]
    {
        guard var payment = payments[id] else { return [] }
        payment.phase = .open
        payment.offered.remove(winner)
        payment.declined.insert(winner)
        payments[id] = payment
        let told: [BusinessAction] = tell ? [.send(winner, Self.failure(id, error.code))] : []
        return told + [.emit(.acceptanceRefused(id, by: winner, error))] + tick(at: now)
    }

    /// The outcome of an execution is unknown: it is looked up at the ledger by payment id, never executed again.
    private mutating func lookUp(_ id: PaymentID) -> [BusinessAction] {
        guard let payment = payments[id] else { return [] }
        switch payment.phase {
        case .customerExecuting(let winner, let acceptance), .executing(let winner, let acceptance, false):
            payments[id]?.phase = .executing(winner: winner, acceptance: acceptance, pending: true)
            return [.emit(.outcomePending(id)), .lookUpStatus(id)]
        default:
            return []
        }
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
