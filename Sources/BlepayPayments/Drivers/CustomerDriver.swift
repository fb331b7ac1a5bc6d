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
    private var onStopAdvertising: (@Sendable () -> Void)?
    private let tickInterval: Duration

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

    /// Starts receiving and handles transport events, and expiries on time, until the transport ends or `stopBLE`.
    public func run() async {
        machine.start()
        let ticker = Task { [tickInterval] in
            while (try? await Task.sleep(for: tickInterval)) != nil { tick() }
        }
        defer { ticker.cancel() }
        for await event in transport.events {
            guard machine.isReceiving else { break }
            switch event {
            case .connected(let peer): perform(machine.connected(peer))
            case .received(let peer, let message): perform(machine.receive(message, from: peer, at: clock()))
            case .disconnected(let peer): perform(machine.disconnected(peer))
            }
        }
        continuation.finish()
    }

    /// Accepts a shown payment with an instrument managed by blepay's ledger (`delegatedInstrument` false) or one
    /// delegated by the customer's client (true), optionally with a tip on top of `amount`.
    public func acceptPayment(_ paymentID: PaymentID, from peer: PeerID, amount: Money, tipMinorUnits: UInt64 = 0,
        instrumentID: String, delegatedInstrument: Bool) throws(PaymentError)
    {
        let terms = AcceptanceTerms(
            tipMinorUnits: tipMinorUnits, instrumentID: instrumentID, delegatedInstrument: delegatedInstrument,
            acceptedAt: clock())
        perform(try machine.accept(paymentID, from: peer, amount: amount, terms: terms))
    }

    /// Declines a shown payment; it is not shown again.
    public func cancelPayment(_ paymentID: PaymentID, from peer: PeerID) throws(PaymentError) {
        perform(try machine.cancel(paymentID, from: peer))
    }

    private func tick() { perform(machine.tick(at: clock())) }

    /// Ends the registration: advertising stops, every connection closes with `disconnected`, then the event
    /// stream finishes.
    public func stopBLE() {
        perform(machine.stop())
        continuation.finish()
    }

    private func perform(_ actions: [CustomerAction]) {
        for action in actions {
            switch action {
            case .emit(let event): continuation.yield(event)
            case .send(let peer, let message): transport.send(message, to: peer)
            case .sendAcceptance(let peer, let request, let terms):
                do {
                    let acceptance = try signer.acceptance(of: request, terms: terms, peer: peer)
                    transport.send(.paymentAcceptance(acceptance), to: peer)
                } catch {
                    perform(machine.acceptanceFailed(request.paymentID, from: peer, error))
                }
            case .disconnect(let peer): transport.disconnect(peer)
            case .stopAdvertising: onStopAdvertising?()
            }
        }
    }
}
