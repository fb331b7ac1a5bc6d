import BlepayProtocol

/// Runs a `BusinessMachine` against a transport and a ledger: the business's side of blepay as an app uses it.
/// Everything the machine decides happens here; nothing is decided here.
public actor BusinessDriver {
    public struct Merchant: Sendable {
        public let id: String
        public let name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    private var machine: BusinessMachine
    private let transport: any PaymentTransport
    private let ledger: any PaymentLedger
    private let signer: any RequestSigner
    private let merchant: Merchant
    private let clock: @Sendable () -> Timestamp
    /// First pause before a status look-up; it doubles, up to 30 s, while the outcome stays unknown.
    private let lookUpInterval: Duration
    private var lookUps: [PaymentID: Int] = [:]
    private let tickInterval: Duration
    private let continuation: AsyncStream<BusinessEvent>.Continuation
    public nonisolated let events: AsyncStream<BusinessEvent>

    public init(
        transport: any PaymentTransport, ledger: any PaymentLedger, signer: any RequestSigner,
        verifier: any AcceptanceVerifier, merchant: Merchant, maximumTipPercent: UInt64 = 100,
        lookUpInterval: Duration = .seconds(1), tickInterval: Duration = .seconds(1),
        clock: @escaping @Sendable () -> Timestamp
    ) {
        machine = BusinessMachine(verifier: verifier, maximumTipPercent: maximumTipPercent)
        self.tickInterval = tickInterval
        self.transport = transport
        self.ledger = ledger
        self.signer = signer
        self.merchant = merchant
        self.lookUpInterval = lookUpInterval
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream()
    }

    /// Handles transport events, and expires requests on time, until the transport ends.
    public func run() async {
        let ticker = Task { [tickInterval] in
            while (try? await Task.sleep(for: tickInterval)) != nil { tick() }
        }
        defer { ticker.cancel() }
        for await event in transport.events {
            let now = clock()
            switch event {
            case .connected(let peer): perform(machine.connected(peer, at: now))
            case .received(let peer, let message): perform(machine.receive(message, from: peer, at: now))
            case .disconnected(let peer): machine.disconnected(peer)
            }
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
                businessOnline: true, signature: .unsigned)
        } catch {
            throw PaymentError(.protocolViolation, error.message)
        }
        let request = try signer.sign(draft)
        perform(try machine.request(request, at: now))
        return request
    }

    /// Withdraws an open request from every customer (fire and forget).
    public func cancelPayment(_ paymentID: PaymentID) throws(PaymentError) { perform(try machine.cancel(paymentID)) }

    private func tick() { perform(machine.tick(at: clock())) }

    private func ledgerAnswered(_ id: PaymentID, _ outcome: LedgerOutcome) {
        if case .unknown = outcome {} else { lookUps[id] = nil }
        perform(machine.ledgerAnswered(id, outcome, at: clock()))
    }

    private func perform(_ actions: [BusinessAction]) {
        for action in actions {
            switch action {
            case .emit(let event):
                continuation.yield(event)
                switch event {
                case .cancelled(let id), .expired(let id): Task { await ledger.cancel(id) }
                default: break
                }
            case .send(let peer, let message):
                transport.send(message, to: peer)
            case .execute(let request, let acceptance):
                Task {
                    let outcome = await ledger.execute(request, acceptance)
                    ledgerAnswered(request.paymentID, outcome)
                }
            case .lookUpStatus(let id):
                let attempt = lookUps[id, default: 0]
                lookUps[id] = attempt + 1
                let pause = min(lookUpInterval * (1 << min(attempt, 16)), .seconds(30))
                Task {
                    try? await Task.sleep(for: pause)
                    let outcome = await ledger.status(of: id)
                    ledgerAnswered(id, outcome)
                }
            }
        }
    }
}
