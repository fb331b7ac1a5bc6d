import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import Synchronization
import Testing

/// A customer whose registration ended (or whose daemon restarted) between its acceptance and the result: the next
/// one, from what was kept, seeks the outcome and learns it; nothing concluded is sought again.
@Suite struct RestartTests {
    @Test func theNextRegistrationSeeksWhatTheLastOneAcceptedAndLearnsItFromTheLedger() async throws {
        let network = InMemoryNetwork(certificate: Fixture.certificate)
        let watchdog = network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        let journal = Journal()
        // The business's ledger takes a while, and executes only what the customer kept before sending it.
        let ledger = InMemoryLedger(latency: .milliseconds(300)) { journal.ids.contains($0.paymentID) ? .execute : .refuse(.unexpected) }
        let business = BusinessDriver(
            transport: network.business, ledger: ledger, signer: PassThrough(), verifier: Verifier(),
            merchant: .init(id: Fixture.certificate.merchantID, name: "Shop"), clock: { Fixture.t0 })
        Task { await business.run() }
        let (transport, _) = network.connectCustomer()
        let first = CustomerDriver(transport: transport, signer: PassThrough(), ledger: ledger, accepted: journal, clock: { Fixture.t0 })
        Task { await first.run() }
        var heard = first.events.makeAsyncIterator()
        let id = try await business.sendPaymentRequest(amount: Fixture.money(990), reference: "table 4").paymentID
        guard case .receivedPayment(_, let request)? = await heard.next() else { Issue.record("not shown"); return }
        try await first.acceptPayment(id, amount: request.amount, instrumentID: "card-1", delegatedInstrument: false)
        #expect(journal.ids == [id])
        // The registration ends before the result.
        await first.stop()
        guard case .error(_, id, let error)? = await heard.next() else { Issue.record("no outcome-unknown"); return }
        #expect(error.code == .outcomeUnknown)
        #expect(journal.ids == [id])

        let second = CustomerDriver(
            transport: Unconnected(), signer: PassThrough(), ledger: ledger, accepted: journal, lookUpInterval: .milliseconds(10),
            clock: { Fixture.t0 })
        Task { await second.run() }
        var found = second.events.makeAsyncIterator()
        guard case .outcomeFound(.none, id, .success(let receipt))? = await found.next() else {
            Issue.record("the outcome was not found")
            return
        }
        #expect(receipt == ledger.executed[id])
        #expect(journal.ids.isEmpty)
        #expect(ledger.executionCount == 1)
        await second.stop()
        network.shutdown()
    }

    @Test func aPaymentWhoseResultCameIsForgottenAndOneDeclinedIsNeverKept() async throws {
        let network = InMemoryNetwork(certificate: Fixture.certificate)
        let watchdog = network.watchdog(after: .seconds(60))
        defer { watchdog.cancel() }
        let journal = Journal()
        let ledger = InMemoryLedger { journal.ids.contains($0.paymentID) ? .execute : .refuse(.unexpected) }
        let business = BusinessDriver(
            transport: network.business, ledger: ledger, signer: PassThrough(), verifier: Verifier(),
            merchant: .init(id: Fixture.certificate.merchantID, name: "Shop"), clock: { Fixture.t0 })
        Task { await business.run() }
        let (transport, _) = network.connectCustomer()
        let customer = CustomerDriver(transport: transport, signer: PassThrough(), accepted: journal, clock: { Fixture.t0 })
        Task { await customer.run() }
        var heard = customer.events.makeAsyncIterator()
        let declined = try await business.sendPaymentRequest(amount: Fixture.money(100), reference: nil).paymentID
        guard case .receivedPayment? = await heard.next() else { Issue.record("not shown"); return }
        try await customer.cancelPayment(declined)
        #expect(await heard.next() == .cancelled(PeerID(1), declined, by: .customer))
        let paid = try await business.sendPaymentRequest(amount: Fixture.money(990), reference: nil).paymentID
        guard case .receivedPayment(_, let request)? = await heard.next() else { Issue.record("not shown"); return }
        try await customer.acceptPayment(paid, amount: request.amount, instrumentID: "card-1", delegatedInstrument: false)
        guard case .finishedPayment(_, let receipt)? = await heard.next() else { Issue.record("not finished"); return }
        #expect(receipt.paymentID == paid)
        #expect(journal.ids.isEmpty && journal.everKept == [paid])
        await customer.stop()
        network.shutdown()
    }
}

/// A customer's accepted payments, kept across its registrations as the state file keeps them across restarts.
final class Journal: AcceptedPayments {
    private let kept = Mutex<[PaymentID: KeptPayment]>([:])
    private let all = Mutex<[PaymentID]>([])

    var ids: Set<PaymentID> { kept.withLock { Set($0.keys) } }
    /// Every payment kept, concluded or not, in order.
    var everKept: [PaymentID] { all.withLock { $0 } }

    func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) throws(PaymentError) {
        all.withLock { $0.append(request.paymentID) }
        kept.withLock { $0[request.paymentID] = KeptPayment(request: request, acceptance: acceptance, keptAt: Fixture.t0) }
    }

    func concluded(_ id: PaymentID) { _ = kept.withLock { $0.removeValue(forKey: id) } }

    func unconcluded() -> [KeptPayment] { kept.withLock { Array($0.values) } }
}

/// A transport no business ever connects to.
struct Unconnected: PaymentTransport {
    let events = AsyncStream<TransportEvent> { _ in }
    func send(_ message: Message, to peer: PeerID) {}
    func disconnect(_ peer: PeerID) {}
}
