import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import Testing

/// The drivers end to end over the in-memory network and ledger, with the link's faults.
@Suite struct InMemoryTests {
    @Test func oneOfTwentyPaysAndNineteenHearOtherPaidForEveryPayment() async throws {
        let scenario = try BroadcastScenario(customers: 20)
        let watchdog = scenario.network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        for round in 1...3 {
            let outcome = try await scenario.pay(minorUnits: UInt64(round) * 1000)
            #expect(outcome.otherPaid == 19)
            #expect(outcome.receipt.amount.minorUnits == UInt64(round) * 1000)
        }
        #expect(scenario.ledger.executionCount == 3)
        #expect(scenario.ledger.executed.count == 3)
    }

    @Test func duplicatedAndDelayedMessagesChangeNothing() async throws {
        let scenario = try BroadcastScenario(
            customers: 5, faults: .init(delay: .milliseconds(1), dropRate: 0, duplicateRate: 0.5))
        let watchdog = scenario.network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        let outcome = try await scenario.pay()
        #expect(outcome.otherPaid == 4)
        #expect(scenario.ledger.executionCount == 1)
    }

    @Test func theNetworkLosesDuplicatesAndCutsAsConfigured() async throws {
        for (faults, copies) in [(InMemoryNetwork.Faults(dropRate: 1), 0), (.init(duplicateRate: 1), 2), (.none, 1)] {
            let network = InMemoryNetwork(certificate: Fixture.certificate, faults: faults)
            let (customer, peer) = network.connectCustomer()
            var events = customer.events.makeAsyncIterator()
            guard case .connected(peer, _)? = await events.next() else { Issue.record("not connected first"); return }
            let message = Message.otherPaid(OtherPaid(paymentID: Fixture.id(1)))
            network.business.send(message, to: peer)
            network.business.send(.otherPaid(OtherPaid(paymentID: Fixture.id(2))), to: peer)
            network.cut(peer)
            var received: [TransportEvent] = []
            while let event = await events.next() {
                received.append(event)
                if event == .disconnected(peer) { break }
            }
            // What was sent before the cut arrives first, in order, as often as the faults say; then the cut.
            let second = TransportEvent.received(peer, .otherPaid(OtherPaid(paymentID: Fixture.id(2))))
            let first = TransportEvent.received(peer, message)
            #expect(received == Array(repeating: first, count: copies) + Array(repeating: second, count: copies)
                + [.disconnected(peer)])
        }
    }

    /// The customer leaves before the result and learns it is unknown; back in range, it asks the business, which
    /// answers with the result the customer missed (`docs/protocol.md` §6.4c).
    @Test func aLostLedgerAnswerIsLookedUpAndTheCustomerLeavingMidFlowFindsTheOutcomeOnReturn() async throws {
        let network = InMemoryNetwork(certificate: Fixture.certificate)
        let watchdog = network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        let ledger = InMemoryLedger { _ in .executeAndLoseAnswer }
        let business = BusinessDriver(
            transport: network.business, ledger: ledger, signer: PassThrough(), verifier: Verifier(),
            merchant: .init(id: Fixture.certificate.merchantID, name: "Shop"), lookUpInterval: .milliseconds(1),
            clock: { Fixture.t0 })
        let (transport, peer) = network.connectCustomer()
        let customer = CustomerDriver(transport: transport, signer: PassThrough(), clock: { Fixture.t0 })
        Task { await business.run() }
        Task { await customer.run() }
        var customerEvents = customer.events.makeAsyncIterator()
        var businessEvents = business.events.makeAsyncIterator()

        let id = try await business.sendPaymentRequest(amount: Fixture.money(990), reference: "table 4").paymentID
        let received = await customerEvents.next()
        guard case .receivedPayment(peer, let request)? = received else {
            Issue.record("expected receivedPayment, got \(String(describing: received))")
            return
        }
        #expect(request.paymentID == id && request.reference == "table 4")
        try await customer.acceptPayment(id, amount: request.amount, instrumentID: "card-1", delegatedInstrument: false)

        var seen: [BusinessEvent] = []
        while seen.count < 4, let event = await businessEvents.next() {
            seen.append(event)
            if case .outcomePending = event { network.cut(peer) }  // the customer walks away meanwhile
        }
        try #require(seen.count == 4, "the events so far: \(seen)")
        #expect(seen[0] == .offered(id, peer))
        #expect(seen[2] == .outcomePending(id))
        guard case .finished(id, peer, let receipt) = seen[3] else {
            Issue.record("expected finished after the look-up, got \(seen)")
            return
        }
        #expect(receipt.amount == Fixture.money(990))
        #expect(ledger.executionCount == 1)
        let last = [await customerEvents.next(), await customerEvents.next()]
        guard case .error(peer, id, let error)?? = last.first else {
            Issue.record("expected the customer's outcome-unknown, got \(last)")
            return
        }
        #expect(error.code == .outcomeUnknown)
        #expect(last[1] == .disconnected(peer))

        let (_, again) = network.connectCustomer(again: transport)
        #expect(await customerEvents.next() == .outcomeFound(again, id, .success(receipt)))
        #expect(await customer.snapshot(of: id)?.status == .finished)
        #expect(ledger.executionCount == 1)
    }

    /// A business restarted after keeping an offline payment whose result its customer never got: asked for it by
    /// the customer's new link, it reads the payment back from its queue and answers with its signed acknowledgement.
    @Test func aBusinessRestartedAnswersAResultQueryFromWhatItKept() async throws {
        let network = InMemoryNetwork(certificate: Fixture.certificate)
        let watchdog = network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        let request = Fixture.request(7)
        let acceptance = Fixture.acceptance(of: request, tip: 50)
        let kept = KeptPayment(request: request, acceptance: acceptance, keptAt: Fixture.later(1_000))
        let policy = OfflinePolicy(trusted: TrustedLedgerKeys([]), currency: Fixture.eur, maximumPaymentMinorUnits: 5_000)
        let business = BusinessDriver(
            transport: network.business, ledger: InMemoryLedger(), signer: PassThrough(),
            offline: .init(policy: policy, queue: Kept([kept])) { false },
            merchant: .init(id: Fixture.certificate.merchantID, name: "Shop"), clock: { Fixture.later(60_000) })
        Task { await business.run() }
        let (customer, peer) = network.connectCustomer()
        var heard = customer.events.makeAsyncIterator()
        guard case .connected(peer, _)? = await heard.next() else {
            Issue.record("expected the link first")
            return
        }
        customer.send(.resultQuery(ResultQuery(paymentID: request.paymentID, acceptanceHash: acceptance.hash)), to: peer)
        let answer = await heard.next()
        guard case .received(peer, .paymentResult(let result))? = answer, case .finished(let receipt) = result.outcome else {
            Issue.record("expected the kept payment's result, got \(String(describing: answer))")
            return
        }
        #expect(result.paymentID == request.paymentID)
        // The acknowledgement the business gave when it kept the payment, signed again: it verifies as that did.
        #expect(receipt.status == .pendingSettlement && receipt.issuedAt == kept.keptAt)
        #expect(throws: Never.self) { try receipt.verifyAcknowledgement(of: request, acceptance, by: Fixture.certificate) }
        network.shutdown()
    }
}

/// What a business kept for settlement before it restarted.
struct Kept: OfflineQueue {
    let payments: [KeptPayment]
    init(_ payments: [KeptPayment]) { self.payments = payments }
    func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> PaymentError? { PaymentError(.unexpected) }
    func kept(_ id: PaymentID) async -> KeptPayment? { payments.first { $0.request.paymentID == id } }
}

struct PassThrough: RequestSigner, AcceptanceSigner {
    func sign(_ request: PaymentRequest) -> PaymentRequest { request }
    func acknowledge(_ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp) throws(PaymentError)
        -> Receipt
    {
        try Fixture.merchantKey.acknowledge(request, acceptance, at: now)
    }
    func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, session: PeerSession) -> PaymentAcceptance {
        Fixture.acceptance(of: request, tip: terms.tipMinorUnits, instrument: terms.instrumentID)
    }
}
