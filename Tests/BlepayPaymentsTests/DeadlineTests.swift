import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import Foundation
import Synchronization
import Testing

/// The machines say when they next need the clock, so that drivers sleep until then instead of ticking: no
/// deadline while idle, the one `tick` acts at while a payment waits, none once it ended.
@Suite struct DeadlineTests {
    let p1 = PeerID(1)

    @Test func aBusinessHasADeadlineOnlyWhileARequestIsOpen() throws {
        var m = BusinessMachine(verifier: Verifier())
        #expect(m.nextDeadline == nil)
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        let r = Fixture.request()
        _ = try m.request(r, at: Fixture.t0)
        #expect(m.nextDeadline == r.expiresAt)
        #expect(m.tick(at: Fixture.later(Fixture.lifetime - 1)).isEmpty)
        #expect(m.tick(at: r.expiresAt).contains(.emit(.expired(r.paymentID))))
        #expect(m.nextDeadline == nil)
    }

    @Test func aCustomerHasADeadlineWhileAPaymentIsShownOrAwaitsItsAnswer() throws {
        var m = CustomerMachine()
        m.start()
        _ = m.connected(p1, Fixture.session)
        #expect(m.nextDeadline == nil)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, amount: r2.amount, terms: Fixture.terms())
        #expect(m.nextDeadline == r1.expiresAt)
        _ = m.tick(at: r1.expiresAt)
        let answered = r2.expiresAt.adding(milliseconds: CustomerMachine.answerGraceMilliseconds)
        #expect(m.nextDeadline == answered)
        #expect(m.tick(at: answered).events.map(\.terminalPayment) == [r2.paymentID])
        #expect(m.nextDeadline == nil)
    }

    /// Nothing but the driver's timer ends a request no customer sees: one living 200 ms ends at its expiry, well
    /// before the second a fixed tick took.
    @Test func aDriverExpiresARequestAtItsDeadline() async throws {
        let network = InMemoryNetwork(certificate: Fixture.certificate)
        let business = BusinessDriver(
            transport: network.business, ledger: InMemoryLedger(), signer: PassThrough(), verifier: Verifier(),
            merchant: .init(id: Fixture.certificate.merchantID, name: "Shop"), clock: wallClock)
        let running = Task { await business.run() }
        defer { running.cancel() }
        var events = business.events.makeAsyncIterator()
        let sent = ContinuousClock.now
        let id = try await business.sendPaymentRequest(
            amount: Fixture.money(990), reference: nil, lifetimeMilliseconds: 200).paymentID
        while let event = await events.next() {
            if event == .expired(id) { break }
        }
        let took = ContinuousClock.now - sent
        #expect(took >= .milliseconds(200) && took < .milliseconds(850), "expired after \(took)")
    }

    @Test func keepTimeFiresPastEachDeadlineAndLooksAgainWhenSignalled() async throws {
        let wakeup = Wakeup()
        let start = ContinuousClock.now
        let deadlines = Deadlines([start + .milliseconds(600)])
        let timing = Task {
            await wakeup.keepTime(deadline: { deadlines.next }, fire: { deadlines.fire() })
        }
        defer { timing.cancel() }
        try await Task.sleep(for: .milliseconds(50))
        // An earlier deadline, signalled, is kept rather than the one the loop sleeps until.
        deadlines.add(start + .milliseconds(300))
        wakeup.signal()
        try await Task.sleep(for: .milliseconds(1000))
        let fired = deadlines.fired.map { $0 - start }
        #expect(fired.count == 2, "fired at \(fired)")
        #expect(fired.first.map { $0 > .milliseconds(300) && $0 < .milliseconds(600) } == true, "fired at \(fired)")
        #expect(fired.last.map { $0 > .milliseconds(600) && $0 < .milliseconds(1000) } == true, "fired at \(fired)")
    }
}

/// Deadlines that each end when fired past, and when they were.
private final class Deadlines: Sendable {
    private let state: Mutex<(pending: [ContinuousClock.Instant], fired: [ContinuousClock.Instant])>

    init(_ pending: [ContinuousClock.Instant]) { state = Mutex((pending, [])) }

    var next: ContinuousClock.Instant? { state.withLock { $0.pending.min() } }
    var fired: [ContinuousClock.Instant] { state.withLock { $0.fired } }

    func add(_ deadline: ContinuousClock.Instant) { state.withLock { $0.pending.append(deadline) } }

    func fire() {
        let now = ContinuousClock.now
        state.withLock { state in
            let due = state.pending.filter { $0 < now }
            guard !due.isEmpty else { return }
            state.pending.removeAll { $0 < now }
            state.fired.append(now)
        }
    }
}

@Sendable private func wallClock() -> Timestamp {
    Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
}
