import BlepayProtocol

/// Runs a `CustomerMachine` against a transport: the customer's side of blepay as an app uses it. `events` is the
/// reference SDK's callback stream; it stays open, across any number of payments, until `stop`.
public actor CustomerDriver {
    private var machine = CustomerMachine()
    private let transport: any PaymentTransport
    private let signer: any AcceptanceSigner
    private let clock: @Sendable () -> Timestamp
    private let continuation: AsyncStream<CustomerEvent>.Continuation
    public nonisolated let events: AsyncStream<CustomerEvent>
    private let onStopAdvertising: (@Sendable () -> Void)?
    private let tickInterval: Duration
    private let quiescence = Quiescence()
    private var stopping = false

    public init(
        transport: any PaymentTransport, signer: any AcceptanceSigner, tickInterval: Duration = .seconds(1),
        clock: @escaping @Sendable () -> Timestamp, onStopAdvertising: (@Sendable () -> Void)? = nil
    ) {
        self.tickInterval = tickInterval
        self.transport = transport
        self.signer = signer
        self.clock = clock
        self.onStopAdvertising = onStopAdvertising
        (events, continuation) = AsyncStream.makeStream()
    }

    /// Starts receiving and handles transport events, and expiries on time, until the transport ends, `stop`, or
    /// the calling task is cancelled.
    public func run() async {
        machine.start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self, tickInterval] in
                while (try? await Task.sleep(for: tickInterval)) != nil { await tick() }
            }
            group.addTask { [self, transport] in
                for await event in transport.events {
                    guard await handle(event) else { break }
                }
            }
            await group.next()
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

    private func perform(_ actions: [CustomerAction]) {
        for action in actions {
            switch action {
            case .emit(let event): continuation.yield(event)
            case .send(let peer, let message): transport.send(message, to: peer)
            case .sendAcceptance(let peer, let request, let terms, let session):
                do {
                    let acceptance = try signer.acceptance(of: request, terms: terms, session: session)
                    transport.send(.paymentAcceptance(acceptance), to: peer)
                } catch {
                    perform(machine.acceptanceFailed(request.paymentID, error))
                }
            case .disconnect(let peer): transport.disconnect(peer)
            case .stopAdvertising: onStopAdvertising?()
            }
        }
        if stopping { quiescence.check(machine.hasUnended) }
    }
}
