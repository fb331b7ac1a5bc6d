import BlepayProtocol

/// The customer's payment state machine: one registration (from `start` to `stop`) receiving any number of
/// payments from any number of businesses, each connection a `PeerID`. A value type: every input returns the
/// actions to carry out, and nothing else happens. It is also the one record of where each payment stands.
///
/// Requests reach `receive` only after the session layer has checked the merchant's certificate and the request's
/// signature; acceptances leave as `sendAcceptance`, signed by the driver for the session given here, and come back
/// to `acceptanceSigned` to be sent. An offline request whose acceptance is a plain one (this customer can reach the
/// ledger) is executed here, once the business's go-ahead names that acceptance: the ledger's receipt is then sent
/// to the business.
public struct CustomerMachine: Sendable {
    enum Phase: Sendable, Hashable {
        case shown
        case accepted
        /// The business's go-ahead came: this customer executes the payment with the ledger.
        case executing
        /// The business reported this failure: the ledger is asked whether the payment was made after all before the
        /// user hears of it, since a failure shown invites paying again.
        case confirming(PaymentError)
        /// A terminal event was emitted; the id is kept so a repeated message is ignored.
        case ended(PaymentStatus)

        /// Accepted, and the link lost before the result: a new connection to the merchant may still bring it.
        static let lostResult = Phase.ended(.failed(.outcomeUnknown))
    }

    struct Payment: Sendable {
        let request: PaymentRequest
        /// The connection it was shown on, or the one its lost result was asked for on.
        var peer: PeerID
        var phase: Phase
        /// When the request expires by this device's clock: its lifetime (at most 15 minutes, as the codec checks)
        /// counted from when it arrived, so that clocks that differ within the tolerance neither hide nor prolong it.
        let deadline: Timestamp
        var receipt: Receipt?
        /// The acceptance as signed and sent.
        var acceptance: PaymentAcceptance?
        /// Whether this customer executed it (and so owes the business the result, again if asked).
        var executedHere = false
        /// Executed here and its link gone before the ledger answered: the business never heard the receipt, and
        /// is sent it over the merchant's next connections.
        var resultOwed = false
        /// How many new connections to its merchant were asked for its lost result.
        var queries = 0
        /// The ledger's last look-up found no such payment: it may still be made until `payableUntil`, not after.
        var ledgerHasNone = false
    }

    /// How many times a result lost with its link is asked for, one new connection to the same merchant each.
    public static let maximumResultQueries = 3
    /// The longest a ledger may still take a voucher's settlements after the voucher expires (its
    /// `pre_authorization_grace_seconds` at most): until then a business may still settle a payment made under it.
    public static let longestSettlementGraceMilliseconds: UInt64 = 30 * 86_400_000

    /// How long after a request's expiry an accepted payment waits for the business's answer.
    public static let answerGraceMilliseconds: UInt64 = 60_000
    /// How far the business's clock may be from this one: a request dated further ahead, or already past its
    /// expiry by more, is refused as `clock-skew` (the same tolerance as merchant certificates).
    public static let clockToleranceMilliseconds = MerchantCertificate.clockTolerance

    public private(set) var isReceiving = false
    private var sessions: [PeerID: PeerSession] = [:]
    private var payments = PaymentRecords<Payment>(capacity: 1000) {
        if case .ended = $0.phase { true } else { false }
    }
    /// Set by `shutdown`: nothing new is shown.
    private var stopping = false
    /// The ledger keys a settled receipt must be signed by before any payment is shown paid; nil: receipts are taken
    /// as they name the payment (the in-memory tiers, whose ledger signs with keys of its own).
    private let ledgerKeys: TrustedLedgerKeys?

    /// The newest deny list from the ledger: a merchant whose business key it names is refused.
    private var denyList: DenyList?

    public init(ledgerKeys: TrustedLedgerKeys? = nil) { self.ledgerKeys = ledgerKeys }

    /// A deny list from the ledger (fetched, or kept from before): the newest one is used from now on. It reaches a
    /// customer that cannot ask the ledger, so a revoked or blocked merchant is refused offline too.
    public mutating func denyListReceived(_ list: DenyList) {
        if list.supersedes(denyList) { denyList = list }
    }

    /// Starts the registration: the driver advertises and accepts connections until `stop`.
    public mutating func start() {
        isReceiving = true
        stopping = false
    }

    /// Payments accepted under an earlier registration, or before a restart, whose outcome was never learnt
    /// (`AcceptedPayments`): each is sought again as a result lost with its link, from the ledger and the merchant's
    /// next connections. Their events name `PeerID.none`.
    public mutating func restore(_ accepted: [KeptPayment]) -> [CustomerAction] {
        var actions: [CustomerAction] = []
        for kept in accepted.sorted(by: { $0.keptAt < $1.keptAt }) where payments[kept.request.paymentID] == nil {
            let id = kept.request.paymentID
            payments.begin(id, Payment(
                request: kept.request, peer: .none, phase: .lostResult, deadline: kept.request.expiresAt,
                acceptance: kept.acceptance))
            actions.append(.lookUpStatus(id))
        }
        return actions
    }

    /// A business connected and completed the handshake. Payments of its merchant whose result was lost with an
    /// earlier link (accepted, then `outcome-unknown`) are asked for, by the acceptance's hash (`docs/protocol.md`
    /// §6.4c); the answer ends them as it would have.
    public mutating func connected(_ peer: PeerID, _ session: PeerSession) -> [CustomerAction] {
        guard isReceiving, !stopping else { return [.disconnect(peer)] }
        guard sessions[peer] == nil else { return [] }
        if denyList?.denies(key: session.certificate.signingKey) == true {
            return [.emit(.error(peer, nil, PaymentError(.securityFailure, "the ledger revoked this merchant's business key"))),
                .disconnect(peer)]
        }
        sessions[peer] = session
        var queries: [CustomerAction] = []
        for payment in payments.newestFirst.reversed()
        where payment.phase == .lostResult && !payment.executedHere && payment.queries < Self.maximumResultQueries
            && payment.request.merchantID == session.certificate.merchantID
        {
            guard let acceptance = payment.acceptance else { continue }
            let id = payment.request.paymentID
            payments[id]?.peer = peer
            payments[id]?.queries += 1
            queries.append(.send(peer, .resultQuery(ResultQuery(paymentID: id, acceptanceHash: acceptance.hash))))
        }
        for payment in payments.newestFirst.reversed()
        where payment.resultOwed && payment.queries < Self.maximumResultQueries
            && payment.request.merchantID == session.certificate.merchantID
        {
            guard let receipt = payment.receipt,
                let result = try? PaymentResult(paymentID: payment.request.paymentID, outcome: .finished(receipt))
            else { continue }
            payments[result.paymentID]?.queries += 1
            queries.append(.send(peer, .paymentResult(result)))
        }
        return queries
    }

    public mutating func receive(_ message: Message, from peer: PeerID, at now: Timestamp) -> [CustomerAction] {
        guard isReceiving, sessions[peer] != nil else { return [] }
        switch message {
        case .paymentRequest(let request):
            return show(request, from: peer, at: now)
        case .cancelPayment(let cancel):
            // An expiry is one event whichever side's clock noticed it first.
            let event: CustomerEvent = cancel.reason == .expired
                ? .error(peer, cancel.paymentID, PaymentError(.expired))
                : .cancelled(peer, cancel.paymentID, by: .business)
            let status: PaymentStatus = cancel.reason == .expired ? .expired : .cancelled
            return end(cancel.paymentID, of: peer, from: [.shown, .accepted], event, status)
        case .paymentResult(let result):
            switch result.outcome {
            case .finished(let receipt):
                guard let payment = payments[result.paymentID], [.accepted, .lostResult].contains(payment.phase),
                    payment.peer == peer
                else { return [] }
                var keep: [CustomerAction] = []
                if receipt.status == .pendingSettlement {
                    // The business kept it under this customer's voucher, and says so under the merchant's signature:
                    // the customer keeps that, and the signed pair too, to settle it if the business does not first.
                    guard let acceptance = payment.acceptance, acceptance.preAuthorization != nil,
                        let session = sessions[peer],
                        (try? receipt.verifyAcknowledgement(of: payment.request, acceptance, by: session.certificate)) != nil
                    else {
                        return conclude(result.paymentID, of: peer, .failure(PaymentError(
                            .securityFailure, "the business's acknowledgement does not verify")), .failed(.securityFailure))
                    }
                    keep = [.keepForSettlement(payment.request, acceptance)]
                } else if let acceptance = payment.acceptance, !settles(receipt, payment.request, acceptance) {
                    // A receipt that does not prove the payment is no outcome, whoever forged it: the ledger is asked.
                    return payment.phase == .accepted
                        ? lose(result.paymentID, of: peer, "the business's receipt does not prove the payment; look it up by its id")
                        : []
                }
                payments[result.paymentID]?.receipt = receipt
                return keep + conclude(result.paymentID, of: peer, .success(receipt), .finished)
            case .failed(let code, let detail):
                let id = result.paymentID
                guard ledgerKeys != nil, let payment = payments[id], payment.phase == .accepted, payment.peer == peer,
                    payment.acceptance != nil
                else { return conclude(id, of: peer, .failure(PaymentError(code, detail)), .failed(code)) }
                payments[id]?.phase = .confirming(PaymentError(code, detail))
                return [.lookUpStatus(id)]
            }
        case .otherPaid(let other):
            return end(other.paymentID, of: peer, from: [.shown, .accepted], .otherPaid(peer, other.paymentID), .otherPaid)
        case .error(let error):
            guard let id = error.paymentID else {
                return [.emit(.error(peer, nil, PaymentError(error.code, error.detail))), .disconnect(peer)]
            }
            return end(id, of: peer, from: [.shown, .accepted], .error(peer, id, PaymentError(error.code, error.detail)),
                .failed(error.code))
        case .goAhead(let goAhead):
            return execute(goAhead, from: peer)
        case .paymentAcceptance, .resultQuery:
            return [.emit(.error(peer, nil, PaymentError(.protocolViolation, "a business sent a customer's message"))),
                .disconnect(peer)]
        }
    }

    /// The driver signed the acceptance `sendAcceptance` asked for: it is kept (a go-ahead must name it) and sent.
    public mutating func acceptanceSigned(_ acceptance: PaymentAcceptance) -> [CustomerAction] {
        let id = acceptance.paymentID
        guard let payment = payments[id], payment.phase == .accepted, payment.acceptance == nil else { return [] }
        payments[id]?.acceptance = acceptance
        return [.send(payment.peer, .paymentAcceptance(acceptance))]
    }

    /// The ledger answered this customer's execution (or a look-up of it). The business hears the outcome, the app
    /// `finishedPayment` with the ledger's receipt or `error`; an unknown outcome is looked up by id, never
    /// executed again.
    public mutating func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome) -> [CustomerAction] {
        guard let payment = payments[id], let acceptance = payment.acceptance else { return [] }
        if payment.phase == .lostResult { return found(id, outcome, payment, acceptance) }
        if case .confirming(let reported) = payment.phase { return confirm(id, reported, outcome, payment, acceptance) }
        guard payment.phase == .executing else { return [] }
        let peer = payment.peer
        switch outcome {
        case .executed(let receipt):
            guard settles(receipt, payment.request, acceptance),
                let result = try? PaymentResult(paymentID: id, outcome: .finished(receipt))
            else { return [.lookUpStatus(id)] }
            payments[id]?.receipt = receipt
            return [.send(peer, .paymentResult(result))] + end(id, of: peer, from: [.executing], .finishedPayment(peer, receipt), .finished)
        case .notExecuted(let error):
            let told = (try? PaymentResult(paymentID: id, outcome: .failed(error.code, detail: nil))).map {
                [CustomerAction.send(peer, .paymentResult($0))]
            } ?? []
            return told + end(id, of: peer, from: [.executing], .error(peer, id, error), .failed(error.code))
        case .unknown:
            return [.lookUpStatus(id)]
        }
    }

    /// The ledger answered about a payment whose result was lost with its link: its own execution's answer, or a
    /// look-up. A settled receipt for this acceptance, or a refusal, is the outcome found; another payer's receipt
    /// means this customer did not pay. A payment the ledger does not know may still be made (the business may
    /// still execute it, or settle it from what it kept) until `payableUntil`: it is asked for again, and only past
    /// that time (`tick`) is it found unpaid. An unknown answer is asked again, for as long as it takes.
    private mutating func found(
        _ id: PaymentID, _ outcome: LedgerOutcome, _ payment: Payment, _ acceptance: PaymentAcceptance
    ) -> [CustomerAction] {
        switch outcome {
        case .executed(let receipt) where paidByAnother(receipt, id, acceptance):
            payments[id]?.phase = .ended(.otherPaid)
            return [.emit(.outcomeFound(payment.peer, id, .failure(PaymentError(.alreadyPaid, "another customer paid it"))))]
        case .executed(let receipt):
            // A receipt that proves nothing (forged on the way, or another payment's) leaves the question open.
            guard settles(receipt, payment.request, acceptance) else { return [.lookUpStatus(id)] }
            payments[id]?.receipt = receipt
            payments[id]?.phase = .ended(.finished)
            payments[id]?.resultOwed = payment.executedHere
            return [.emit(.outcomeFound(payment.peer, id, .success(receipt)))]
        case .notExecuted(let error) where error.code != .notFound || payment.executedHere:
            payments[id]?.phase = .ended(.failed(error.code))
            return [.emit(.outcomeFound(payment.peer, id, .failure(error)))]
        case .notExecuted:
            payments[id]?.ledgerHasNone = true
            return [.lookUpStatus(id)]
        case .unknown:
            payments[id]?.ledgerHasNone = false
            return [.lookUpStatus(id)]
        }
    }

    /// The ledger answered about a payment the business said failed. Paid by this customer after all: it is
    /// finished, on the ledger's receipt; paid by another: `otherPaid`; certainly not paid: the business's failure is
    /// shown. When the ledger cannot say (unreachable, or the payment still open, which its business may yet execute),
    /// the failure is shown and the payment is looked up on as a lost result, its outcome reported when found; its
    /// business, having answered, is not asked again.
    private mutating func confirm(
        _ id: PaymentID, _ reported: PaymentError, _ outcome: LedgerOutcome, _ payment: Payment,
        _ acceptance: PaymentAcceptance
    ) -> [CustomerAction] {
        let peer = payment.peer
        switch outcome {
        case .executed(let receipt) where settles(receipt, payment.request, acceptance):
            payments[id]?.receipt = receipt
            payments[id]?.phase = .ended(.finished)
            return [.emit(.finishedPayment(peer, receipt))]
        case .executed(let receipt) where paidByAnother(receipt, id, acceptance):
            payments[id]?.phase = .ended(.otherPaid)
            return [.emit(.otherPaid(peer, id))]
        case .notExecuted:
            payments[id]?.phase = .ended(.failed(reported.code))
            return [.emit(.error(peer, id, reported))]
        case .executed, .unknown:
            payments[id]?.phase = .lostResult
            payments[id]?.queries = Self.maximumResultQueries
            return [.emit(.error(peer, id, reported)), .lookUpStatus(id)]
        }
    }

    /// The last moment a lost payment could still be made by anyone: a plain acceptance until its request expires
    /// (by the ledger's clock, which may differ from this one by the tolerance); one under a voucher until the
    /// ledger stops taking the voucher's settlements.
    private static func payableUntil(_ payment: Payment) -> Timestamp {
        if let voucher = payment.acceptance?.preAuthorization?.voucher {
            return voucher.expiresAt.adding(milliseconds: longestSettlementGraceMilliseconds + clockToleranceMilliseconds)
        }
        return payment.deadline.adding(milliseconds: clockToleranceMilliseconds)
    }

    /// Whether one of the ledger keys signed it (with none configured, any receipt is taken as signed).
    private func signedByLedger(_ receipt: Receipt) -> Bool { ledgerKeys.map(receipt.isSigned(trusting:)) ?? true }

    /// Whether the ledger's receipt shows payment `id` settled by a payer other than this acceptance's.
    private func paidByAnother(_ receipt: Receipt, _ id: PaymentID, _ acceptance: PaymentAcceptance) -> Bool {
        receipt.status == .settled && receipt.paymentID == id && receipt.payerKey != acceptance.customerKey
            && signedByLedger(receipt)
    }

    /// Whether the receipt settles the payment as this customer accepted it: its payment, payer and total; with
    /// ledger keys, only one they signed counts (`docs/protocol.md` §6.4).
    private func settles(_ receipt: Receipt, _ request: PaymentRequest, _ acceptance: PaymentAcceptance) -> Bool {
        if let ledgerKeys { return (try? receipt.verify(paying: request, with: acceptance, trusting: ledgerKeys)) != nil }
        return receipt.status == .settled && receipt.paymentID == request.paymentID && receipt.amount == acceptance.amount
            && receipt.tipMinorUnits == acceptance.tipMinorUnits && receipt.payerKey == acceptance.customerKey
    }

    /// The customer accepts a shown payment. Amount and currency must be the request's; the tip is added on top.
    public mutating func accept(_ paymentID: PaymentID, amount: Money, terms: AcceptanceTerms) throws(PaymentError)
        -> [CustomerAction]
    {
        let payment = try shown(paymentID)
        guard terms.acceptedAt < payment.deadline else { throw PaymentError(.expired) }
        guard amount == payment.request.amount else {
            throw PaymentError(.amountMismatch, "accepting \(amount), the request is for \(payment.request.amount)")
        }
        guard terms.tipMinorUnits <= Money.maximumMinorUnits - amount.minorUnits else {
            throw PaymentError(.amountMismatch, "the tip takes the total over the maximum amount")
        }
        guard (try? Text.validateIdentifier(terms.instrumentID, field: "instrument id")) != nil else {
            throw PaymentError(.invalidInstrument, "not an instrument id")
        }
        guard let session = sessions[payment.peer] else { throw PaymentError(.connectionFailed) }
        payments[paymentID]?.phase = .accepted
        return [.sendAcceptance(payment.peer, payment.request, terms, session)]
    }

    /// The customer declines a shown payment; it is not shown again, on this connection or another.
    public mutating func cancel(_ paymentID: PaymentID) throws(PaymentError) -> [CustomerAction] {
        let payment = try shown(paymentID)
        return [.send(payment.peer, .cancelPayment(CancelPayment(paymentID: paymentID, reason: .userCancelled)))]
            + end(paymentID, of: payment.peer, from: [.shown], .cancelled(payment.peer, paymentID, by: .customer),
                .cancelled)
    }

    /// Shown payments past their deadline end with `error(expired)`. Accepted ones wait for the business's
    /// verdict, since the ledger, not the clock, decides them; but a business silent for `answerGrace` after the
    /// deadline ends them with `error(outcome-unknown)`, to be looked up by payment id. A lost one the ledger does
    /// not know once it can no longer be made is found unpaid.
    public mutating func tick(at now: Timestamp) -> [CustomerAction] {
        var actions: [CustomerAction] = []
        for payment in payments.newestFirst.reversed() {
            let id = payment.request.paymentID
            if payment.phase == .shown, now >= payment.deadline {
                actions += end(id, of: payment.peer, from: [.shown], .error(payment.peer, id, PaymentError(.expired)),
                    .expired)
            } else if payment.phase == .accepted || payment.phase == .executing,
                now >= payment.deadline.adding(milliseconds: Self.answerGraceMilliseconds)
            {
                actions += lose(id, of: payment.peer, "no final answer; look the payment up by its id")
            } else if payment.phase == .lostResult, payment.ledgerHasNone, now >= Self.payableUntil(payment) {
                payments[id]?.phase = .ended(.failed(.notFound))
                actions.append(.emit(.outcomeFound(payment.peer, id, .failure(PaymentError(
                    .notFound, "the ledger has no such payment, and it can no longer be made: nothing was charged")))))
            }
        }
        return actions
    }

    /// The earliest instant at which `tick` has something to end (a shown payment's deadline, an accepted one's
    /// grace, a lost one the ledger does not know becoming unpayable); nil when nothing waits on the clock.
    public var nextDeadline: Timestamp? {
        payments.newestFirst.compactMap { payment -> Timestamp? in
            switch payment.phase {
            case .shown: payment.deadline
            case .accepted, .executing: payment.deadline.adding(milliseconds: Self.answerGraceMilliseconds)
            case .lostResult where payment.ledgerHasNone: Self.payableUntil(payment)
            default: nil
            }
        }.min()
    }

    /// The driver could not sign an acceptance (no usable device key): the payment ends here with that error, and
    /// the business is told the customer withdrew.
    public mutating func acceptanceFailed(_ paymentID: PaymentID, _ error: PaymentError) -> [CustomerAction] {
        guard let peer = payments[paymentID]?.peer else { return [] }
        let ended = end(paymentID, of: peer, from: [.accepted], .error(peer, paymentID, error), .failed(error.code))
        guard !ended.isEmpty else { return [] }
        return [.send(peer, .cancelPayment(CancelPayment(paymentID: paymentID, reason: .userCancelled)))] + ended
    }

    /// The link closed. Open payments end first: not yet accepted, with `connection-failed` (shown again if the
    /// business offers it over a new connection); accepted, with `outcome-unknown` (the business may have executed
    /// it; its status is found by payment id). Then `disconnected`, after which nothing more is said of this peer.
    public mutating func disconnected(_ peer: PeerID) -> [CustomerAction] {
        guard sessions.removeValue(forKey: peer) != nil else { return [] }
        var actions: [CustomerAction] = []
        for payment in payments.newestFirst.reversed() where payment.peer == peer {
            let id = payment.request.paymentID
            actions += end(id, of: peer, from: [.shown], .error(peer, id, PaymentError(
                .connectionFailed, "the business disconnected")), .failed(.connectionFailed))
            actions += lose(id, of: peer, "disconnected after accepting; look the payment up by its id")
        }
        return actions + [.emit(.disconnected(peer))]
    }

    /// An accepted payment's answer did not come: it ends `outcome-unknown`, and the outcome is sought by payment id,
    /// from the ledger and (§6.4c) the merchant's next connection; never by executing it again. One this customer
    /// executes is not looked up: its execution's answer is still to come.
    private mutating func lose(_ id: PaymentID, of peer: PeerID, _ detail: String) -> [CustomerAction] {
        let accepted = payments[id]?.phase == .accepted
        let ended = end(id, of: peer, from: [.accepted, .executing], .error(peer, id, PaymentError(.outcomeUnknown, detail)),
            .failed(.outcomeUnknown))
        return accepted && !ended.isEmpty ? ended + [.lookUpStatus(id)] : ended
    }

    /// The daemon is stopping: shown payments are declined (their business is told) and nothing new is shown;
    /// accepted ones go on until their result, which `hasUnended` waits for.
    public mutating func shutdown() -> [CustomerAction] {
        stopping = true
        var actions: [CustomerAction] = []
        for payment in payments.newestFirst where payment.phase == .shown {
            actions += (try? cancel(payment.request.paymentID)) ?? []
        }
        return actions
    }

    /// Whether a payment is still shown or accepted: a stopping daemon waits until each has ended with its event.
    public var hasUnended: Bool { payments.newestFirst.contains { if case .ended = $0.phase { false } else { true } } }

    /// Ends the registration: advertising stops and every connection closes, each with its `disconnected`.
    public mutating func stop() -> [CustomerAction] {
        guard isReceiving else { return [] }
        var actions: [CustomerAction] = [.stopAdvertising]
        for peer in sessions.keys.sorted() { actions += [.disconnect(peer)] + disconnected(peer) }
        isReceiving = false
        return actions
    }

    /// A payment this registration was shown (the newest showing, if shown over several connections).
    public func snapshot(of id: PaymentID) -> PaymentSnapshot? { payments[id].map(Self.snapshot) }

    /// The payments shown, newest first.
    public var snapshots: [PaymentSnapshot] { payments.newestFirst.map(Self.snapshot) }

    private static func snapshot(_ payment: Payment) -> PaymentSnapshot {
        let status: PaymentStatus = switch payment.phase {
        case .shown: .open
        case .accepted, .executing, .confirming: .accepted
        case .ended(let status): status
        }
        return PaymentSnapshot(request: payment.request, peer: payment.peer, status: status, receipt: payment.receipt)
    }

    /// Shows a request unless it was shown already (a repeat, or one declined or ended), or the clocks differ by more
    /// than the tolerance: then the business hears `clock-skew` and the app an `error` naming the payment.
    private mutating func show(_ request: PaymentRequest, from peer: PeerID, at now: Timestamp) -> [CustomerAction] {
        let id = request.paymentID
        if let known = payments[id], known.phase != .ended(.failed(.connectionFailed)) { return [] }
        guard !stopping else { return [] }
        let tolerance = Self.clockToleranceMilliseconds
        let ahead = request.createdAt.millisecondsSince1970 > now.millisecondsSince1970 + tolerance
        let past = now.millisecondsSince1970 > request.expiresAt.millisecondsSince1970 + tolerance
        let deadline = now.adding(milliseconds: request.expiresAt.millisecondsSince1970
            - min(request.createdAt.millisecondsSince1970, request.expiresAt.millisecondsSince1970))
        guard ahead || past else {
            payments.begin(id, Payment(request: request, peer: peer, phase: .shown, deadline: deadline))
            return [.emit(.receivedPayment(peer, request))]
        }
        let error = PaymentError(.clockSkew, ahead
            ? "the request is dated \((request.createdAt.millisecondsSince1970 - now.millisecondsSince1970) / 1000) s after this device's clock"
            : "the request expired \((now.millisecondsSince1970 - request.expiresAt.millisecondsSince1970) / 1000) s before this device's clock")
        payments.begin(id, Payment(request: request, peer: peer, phase: .ended(.failed(.clockSkew)), deadline: deadline))
        let notice = (try? ErrorMessage(code: .clockSkew, paymentID: id, detail: nil)).map { Message.error($0) }
        return (notice.map { [.send(peer, $0)] } ?? []) + [.emit(.error(peer, id, error))]
    }

    private func shown(_ paymentID: PaymentID) throws(PaymentError) -> Payment {
        guard isReceiving, let payment = payments[paymentID] else { throw PaymentError(.notFound) }
        switch payment.phase {
        case .shown: return payment
        case .accepted, .executing, .confirming: throw PaymentError(.alreadyPaid, "already accepted")
        case .ended: throw PaymentError(.notFound, "the payment has ended")
        }
    }

    /// The business chose this customer's acceptance of an offline request: it is executed here, once. A go-ahead
    /// for an online request, or naming another acceptance, is not obeyed; one repeated after the end is answered
    /// with the same result.
    private mutating func execute(_ goAhead: GoAhead, from peer: PeerID) -> [CustomerAction] {
        let id = goAhead.paymentID
        guard let payment = payments[id], payment.peer == peer, let acceptance = payment.acceptance,
            acceptance.hash == goAhead.acceptanceHash, !payment.request.businessOnline,
            acceptance.preAuthorization == nil
        else { return [] }
        switch payment.phase {
        case .accepted:
            payments[id]?.phase = .executing
            payments[id]?.executedHere = true
            return [.execute(payment.request, acceptance)]
        case .ended(.finished) where payment.executedHere:
            guard let receipt = payment.receipt, let result = try? PaymentResult(paymentID: id, outcome: .finished(receipt))
            else { return [] }
            return [.send(peer, .paymentResult(result))]
        default:
            return []
        }
    }

    /// Ends an accepted payment with the business's result. One whose result was lost with its link, asked for over
    /// a new one, learns it as `outcomeFound`: its own events ended with `error(outcome-unknown)`.
    private mutating func conclude(
        _ id: PaymentID, of peer: PeerID, _ outcome: Result<Receipt, PaymentError>, _ status: PaymentStatus
    ) -> [CustomerAction] {
        guard let payment = payments[id], payment.peer == peer else { return [] }
        if payment.phase == .lostResult {
            payments[id]?.phase = .ended(status)
            return [.emit(.outcomeFound(peer, id, outcome))]
        }
        let event: CustomerEvent = switch outcome {
        case .success(let receipt): .finishedPayment(peer, receipt)
        case .failure(let error): .error(peer, id, error)
        }
        return end(id, of: peer, from: [.accepted], event, status)
    }

    private mutating func end(
        _ id: PaymentID, of peer: PeerID, from phases: Set<Phase>, _ event: CustomerEvent, _ status: PaymentStatus
    ) -> [CustomerAction] {
        guard let payment = payments[id], payment.peer == peer, phases.contains(payment.phase) else { return [] }
        payments[id]?.phase = .ended(status)
        return [.emit(event)]
    }
}
