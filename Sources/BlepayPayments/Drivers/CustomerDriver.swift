import BlepayProtocol

/// Runs a `CustomerMachine` against a transport: the customer's side of blepay as an app uses it. `events` is the
/// reference SDK's callback stream; it stays open, across any number of payments, until `stop`. With a ledger it
/// executes the offline requests the business gives it the go-ahead for; ledger calls run as child tasks of `run`.
public actor CustomerDriver {
    /// A call to the ledger, carried out in `run`'s task group.
    private enum Job: Sendable {
        case execute(PaymentRequest, PaymentAcceptance)
        case lookUp(PaymentID, after: Duration)
        case keep(PaymentRequest, PaymentAcceptance)
    }

    private var machine: CustomerMachine
    private let transport: any PaymentTransport
    private let signer: any AcceptanceSigner
    private let ledger: (any PaymentLedger)?
    /// Where signed pairs paid under a voucher are kept until settled; nil: the business alone settles them.
    private let settlement: (any OfflineQueue)?
    /// Where each acceptance is kept until its outcome is known; nil: only in memory, lost with the process.
    private let accepted: (any AcceptedPayments)?
    /// The payments kept there and not yet concluded.
    private var awaited: Set<PaymentID> = []
    /// The pauses before status look-ups while an outcome stays unknown.
    private var lookUps: LookUpBackoff
    private let jobs = AsyncStream<Job>.makeStream()
    private let clock: @Sendable () -> Timestamp
    private let continuation: AsyncStream<CustomerEvent>.Continuation
    public nonisolated let events: AsyncStream<CustomerEvent>
    private let onStopAdvertising: (@Sendable () -> Void)?
    /// Rung after every input, which may have moved the machine's next deadline.
    private let wakeup = Wakeup()
    private let quiescence = Quiescence()
    private var stopping = false

    public init(
        transport: any PaymentTransport, signer: any AcceptanceSigner, ledger: (any PaymentLedger)? = nil,
        settlement: (any OfflineQueue)? = nil, accepted: (any AcceptedPayments)? = nil, ledgerKeys: TrustedLedgerKeys? = nil,
        lookUpInterval: Duration = .seconds(1), clock: @escaping @Sendable () -> Timestamp,
        onStopAdvertising: (@Sendable () -> Void)? = nil
    ) {
        machine = CustomerMachine(ledgerKeys: ledgerKeys)
        self.transport = transport
        self.signer = signer
        self.ledger = ledger
        self.settlement = settlement
        self.accepted = accepted
        lookUps = LookUpBackoff(first: lookUpInterval)
        self.clock = clock
        self.onStopAdvertising = onStopAdvertising
        (events, continuation) = AsyncStream.makeStream()
    }

    /// Starts receiving and handles transport events, and expiries on time, until the transport ends, `stop`, or
    /// the calling task is cancelled. Payments accepted before and never concluded are sought again first.
    public func run() async {
        machine.start()
        let unconcluded = accepted?.unconcluded() ?? []
        awaited.formUnion(unconcluded.map(\.request.paymentID))
        perform(machine.restore(unconcluded))
        await withDiscardingTaskGroup { group in
            group.addTask { [self, wakeup] in
                await wakeup.keepTime(deadline: { await self.nextDeadline() }, fire: { await self.tick() })
            }
            group.addTask { [self, transport, jobs] in
                for await event in transport.events {
                    guard await handle(event) else { break }
                }
                jobs.continuation.finish()
            }
            for await job in jobs.stream {
                group.addTask { [self] in await carryOut(job) }
            }
            group.cancelAll()
        }
        continuation.finish()
    }

    /// Accepts a shown payment with an instrument managed by blepay's ledger (`delegatedInstrument` false) or one
    /// delegated by the customer's client (true), optionally with a tip on top of `amount`.
    public func acceptPayment(_ paymentID: PaymentID, amount: Money, tipMinorUnits: UInt64 = 0,
        instrumentID: String, delegatedInstrument: Bool) throws(PaymentError)
    {
        let terms = AcceptanceTerms(
            tipMinorUnits: tipMinorUnits, instrumentID: instrumentID, delegatedInstrument: delegatedInstrument,
            acceptedAt: clock())
        perform(try machine.accept(paymentID, amount: amount, terms: terms))
    }

    /// Declines a shown payment; it is not shown again.
    public func cancelPayment(_ paymentID: PaymentID) throws(PaymentError) {
        perform(try machine.cancel(paymentID))
    }

    public var isReceiving: Bool { machine.isReceiving }

    public func snapshot(of paymentID: PaymentID) -> PaymentSnapshot? { machine.snapshot(of: paymentID) }

    /// A deny list from the ledger: merchants it names are refused from the next connection on.
    public func denyListReceived(_ list: DenyList) { machine.denyListReceived(list) }

    /// The payments shown, newest first.
    public var snapshots: [PaymentSnapshot] { machine.snapshots }

    /// The daemon is stopping: shown payments are declined, accepted ones waited for up to `limit` so that they end
    /// with their result; then receiving stops.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        stopping = true
        perform(machine.shutdown())
        if machine.hasUnended { _ = await quiescence.wait(atMost: limit) }
        stop()
    }

    /// Ends the registration: advertising stops, every connection closes with `disconnected`, then the event
    /// stream finishes.
    public func stop() {
        perform(machine.stop())
        jobs.continuation.finish()
        continuation.finish()
    }

    /// Whether to go on.
    private func handle(_ event: TransportEvent) -> Bool {
        guard machine.isReceiving else { return false }
        switch event {
        case .connected(let peer, let session): perform(machine.connected(peer, session))
        case .received(let peer, let message): perform(machine.receive(message, from: peer, at: clock()))
        case .disconnected(let peer): perform(machine.disconnected(peer))
        }
        return true
    }

    private func tick() { perform(machine.tick(at: clock())) }

    /// When the machine next has something to time out: the driver sleeps until then, not on a fixed tick.
    private func nextDeadline() -> ContinuousClock.Instant? {
        machine.nextDeadline.map { Wakeup.instant(of: $0, now: clock()) }
    }

    private func carryOut(_ job: Job) async {
        switch job {
        case .execute(let request, let acceptance):
            guard let ledger else {
                return ledgerAnswered(request.paymentID, .notExecuted(PaymentError(.ledgerOffline, "this customer has no ledger")))
            }
            ledgerAnswered(request.paymentID, await ledger.execute(request, acceptance))
        case .lookUp(let id, let pause):
            guard let ledger, (try? await Task.sleep(for: pause)) != nil else { return }
            ledgerAnswered(id, await ledger.status(of: id, merchant: machine.snapshot(of: id)?.request.merchantID))
        case .keep(let request, let acceptance):
            // What the business kept is the customer's copy: a refusal here changes nothing on the payment.
            _ = await settlement?.keep(request, acceptance)
        }
    }

    private func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome) {
        let actions = machine.ledgerAnswered(id, outcome)
        lookUps.answered(id, lookingAgain: actions.contains(.lookUpStatus(id)))
        perform(actions)
    }

    private func perform(_ actions: [CustomerAction]) {
        for action in actions {
            switch action {
            case .emit(let event):
                if let id = Self.concludes(event), awaited.remove(id) != nil { accepted?.concluded(id) }
                continuation.yield(event)
            case .send(let peer, let message): transport.send(message, to: peer)
            case .sendAcceptance(_, let request, let terms, let session):
                do {
                    let acceptance = try signer.acceptance(of: request, terms: terms, session: session)
                    if let accepted {
                        try accepted.keep(request, acceptance)
                        awaited.insert(request.paymentID)
                    }
                    perform(machine.acceptanceSigned(acceptance))
                } catch {
                    perform(machine.acceptanceFailed(request.paymentID, error))
                }
            case .disconnect(let peer): transport.disconnect(peer)
            case .stopAdvertising: onStopAdvertising?()
            case .execute(let request, let acceptance): jobs.continuation.yield(.execute(request, acceptance))
            case .keepForSettlement(let request, let acceptance): jobs.continuation.yield(.keep(request, acceptance))
            case .lookUpStatus(let id):
                jobs.continuation.yield(.lookUp(id, after: lookUps.next(id)))
            }
        }
        wakeup.signal()
        if stopping { quiescence.check(machine.hasUnended) }
    }

    /// The payment whose outcome this event makes known: any terminal event but `outcome-unknown`, and the outcome
    /// found later.
    private static func concludes(_ event: CustomerEvent) -> PaymentID? {
        switch event {
        case .error(_, _, let error) where error.code == .outcomeUnknown: nil
        case .outcomeFound(_, let id, _): id
        default: event.terminalPayment
        }
    }
}
