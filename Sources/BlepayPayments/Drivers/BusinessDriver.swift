import BlepayProtocol

/// Runs a `BusinessMachine` against a transport and a ledger: the business's side of blepay as an app uses it.
/// Everything the machine decides happens here; nothing is decided here. Ledger calls run as child tasks of `run`,
/// so none outlives it.
public actor BusinessDriver {
    public struct Merchant: Sendable {
        public let id: String
        public let name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// A call to the ledger, carried out in `run`'s task group.
    private enum Job: Sendable {
        case execute(PaymentRequest, PaymentAcceptance)
        case lookUp(PaymentID, after: Duration)
        case cancel(PaymentID)
        case queue(PaymentRequest, PaymentAcceptance)
        case recall(ResultQuery, from: PeerID)
    }

    private var machine: BusinessMachine
    private let transport: any PaymentTransport
    private let ledger: any PaymentLedger
    /// Where offline acceptances are kept, and whether the ledger can be reached now (what each request says).
    private let offline: Offline?
    private let signer: any RequestSigner
    private let merchant: Merchant
    private let clock: @Sendable () -> Timestamp
    /// The pauses before status look-ups while an outcome stays unknown.
    private var lookUps: LookUpBackoff
    /// Rung after every input, which may have moved the machine's next deadline.
    private let wakeup = Wakeup()
    private let jobs = AsyncStream<Job>.makeStream()
    private let quiescence = Quiescence()
    private var stopping = false
    /// Withdrawals sent to the ledger and not answered yet. A stopping driver waits for them too: a request
    /// cancelled as the daemon stops is withdrawn at the ledger, not left open there until it expires.
    private var withdrawing = 0
    private let continuation: AsyncStream<BusinessEvent>.Continuation
    public nonisolated let events: AsyncStream<BusinessEvent>

    /// Payments taken while the ledger cannot be reached: under `policy`, kept in `queue`, and asked for while
    /// `ledgerReachable` says no.
    public struct Offline: Sendable {
        public let policy: OfflinePolicy
        public let queue: any OfflineQueue
        public let ledgerReachable: @Sendable () -> Bool

        public init(policy: OfflinePolicy, queue: any OfflineQueue, ledgerReachable: @escaping @Sendable () -> Bool) {
            self.policy = policy
            self.queue = queue
            self.ledgerReachable = ledgerReachable
        }
    }

    public init(
        transport: any PaymentTransport, ledger: any PaymentLedger, signer: any RequestSigner,
        verifier: any AcceptanceVerifier = SignatureVerifier(), offline: Offline? = nil,
        ledgerKeys: TrustedLedgerKeys? = nil, merchant: Merchant,
        maximumTipPercent: UInt64 = 100, lookUpInterval: Duration = .seconds(1),
        clock: @escaping @Sendable () -> Timestamp
    ) {
        machine = BusinessMachine(
            verifier: verifier, offline: offline?.policy, ledgerKeys: ledgerKeys, maximumTipPercent: maximumTipPercent)
        self.offline = offline
        self.transport = transport
        self.ledger = ledger
        self.signer = signer
        self.merchant = merchant
        lookUps = LookUpBackoff(first: lookUpInterval)
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream()
    }

    /// Handles transport events, expires requests on time and calls the ledger, until the transport ends or the
    /// calling task is cancelled; ledger calls still under way are cancelled then.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [self, wakeup] in
                await wakeup.keepTime(deadline: { await self.nextDeadline() }, fire: { await self.tick() })
            }
            group.addTask { [self, transport, jobs] in
                for await event in transport.events { await handle(event) }
                jobs.continuation.finish()
            }
            for await job in jobs.stream {
                group.addTask { [self] in await carryOut(job) }
            }
            group.cancelAll()
        }
        continuation.finish()
    }

    /// Opens a request for `amount`, offered to every connected customer until paid, cancelled or expired; returns
    /// the signed request (its `paymentID` names the payment from now on).
    public func sendPaymentRequest(amount: Money, reference: String?, lifetimeMilliseconds: UInt64 = 120_000)
        throws(PaymentError) -> PaymentRequest
    {
        let now = clock()
        let draft: PaymentRequest
        do {
            draft = try PaymentRequest(
                paymentID: .random(), amount: amount, reference: reference, merchantID: merchant.id,
                merchantName: merchant.name, createdAt: now, expiresAt: now.adding(milliseconds: lifetimeMilliseconds),
                businessOnline: offline?.ledgerReachable() ?? true, signature: .unsigned)
        } catch {
            throw PaymentError(.protocolViolation, error.message)
        }
        let request = try signer.sign(draft)
        perform(try machine.request(request, at: now))
        return request
    }

    /// A deny list from the ledger: offline acceptances are checked against the newest.
    public func denyListReceived(_ list: DenyList) { machine.denyListReceived(list) }

    /// Withdraws an open request from every customer (fire and forget).
    public func cancelPayment(_ paymentID: PaymentID) throws(PaymentError) { perform(try machine.cancel(paymentID)) }

    public func snapshot(of paymentID: PaymentID) -> PaymentSnapshot? { machine.snapshot(of: paymentID) }

    /// The requests sent, newest first.
    public var snapshots: [PaymentSnapshot] { machine.snapshots }

    /// The daemon is stopping: open requests are withdrawn (their customers and the ledger told), payments being
    /// executed are waited for up to `limit` so that they end with their result; then `events` ends.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        stopping = true
        perform(machine.shutdown())
        if isBusy { _ = await quiescence.wait(atMost: limit) }
        continuation.finish()
    }

    /// Whether a payment is still open or a withdrawal still on its way to the ledger.
    private var isBusy: Bool { machine.hasUnended || withdrawing > 0 }

    private func handle(_ event: TransportEvent) {
        let now = clock()
        switch event {
        case .connected(let peer, let session): perform(machine.connected(peer, session, at: now))
        case .received(let peer, let message): perform(machine.receive(message, from: peer, at: now))
        case .disconnected(let peer): perform(machine.disconnected(peer))
        }
    }

    private func tick() { perform(machine.tick(at: clock())) }

    /// When the machine next has something to time out: the driver sleeps until then, not on a fixed tick.
    private func nextDeadline() -> ContinuousClock.Instant? {
        machine.nextDeadline.map { Wakeup.instant(of: $0, now: clock()) }
    }

    private func carryOut(_ job: Job) async {
        switch job {
        case .execute(let request, let acceptance):
            ledgerAnswered(request.paymentID, await ledger.execute(request, acceptance))
        case .lookUp(let id, let pause):
            guard (try? await Task.sleep(for: pause)) != nil else { return }
            ledgerAnswered(id, await ledger.status(of: id, merchant: nil))
        case .cancel(let id):
            await ledger.cancel(id)
            withdrawing -= 1
            if stopping { quiescence.check(isBusy) }
        case .queue(let request, let acceptance):
            let id = request.paymentID
            guard let offline,
                let receipt = try? signer.acknowledge(request, acceptance, at: clock())
            else { return ledgerAnswered(id, .notExecuted(PaymentError(.ledgerOffline))) }
            // Once kept on disk the payment is the customer's signed promise, settled when the ledger is back.
            let refusal = await offline.queue.keep(request, acceptance)
            ledgerAnswered(id, refusal.map { .notExecuted($0) } ?? .executed(receipt))
        case .recall(let query, let peer):
            guard let kept = await offline?.queue.kept(query.paymentID),
                let receipt = try? signer.acknowledge(kept.request, kept.acceptance, at: kept.keptAt)
            else { return }
            perform(machine.recalled(kept, acknowledgement: receipt, for: query, from: peer))
        }
    }

    private func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome) {
        let actions = machine.ledgerAnswered(id, outcome, at: clock())
        lookUps.answered(id, lookingAgain: actions.contains(.lookUpStatus(id)))
        perform(actions)
    }

    private func perform(_ actions: [BusinessAction]) {
        for action in actions {
            switch action {
            case .emit(let event):
                continuation.yield(event)
                switch event {
                case .cancelled(let id), .expired(let id):
                    if case .enqueued = jobs.continuation.yield(.cancel(id)) { withdrawing += 1 }
                default: break
                }
            case .send(let peer, let message):
                transport.send(message, to: peer)
            case .execute(let request, let acceptance):
                jobs.continuation.yield(.execute(request, acceptance))
            case .queue(let request, let acceptance):
                jobs.continuation.yield(.queue(request, acceptance))
            case .recall(let query, let peer):
                jobs.continuation.yield(.recall(query, from: peer))
            case .lookUpStatus(let id):
                jobs.continuation.yield(.lookUp(id, after: lookUps.next(id)))
            }
        }
        wakeup.signal()
        if stopping { quiescence.check(isBusy) }
    }
}
