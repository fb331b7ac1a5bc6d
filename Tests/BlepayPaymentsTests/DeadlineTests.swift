import BlepayPayments
import BlepayProtocol
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

    /// With nothing due the loop sleeps without a timer; a signal makes it look again, and it fires past the new
    /// deadline, never before. (Bounds on how late would fail whenever the test pool is busy.)
    @Test func keepTimeSleepsUntilSignalledThenFiresPastTheDeadline() async throws {
        let wakeup = Wakeup()
        let deadlines = Deadlines([])
        let timing = Task {
            await wakeup.keepTime(deadline: { deadlines.next }, fire: { deadlines.fire() })
        }
        defer { timing.cancel() }
        try await Task.sleep(for: .milliseconds(50))
        let deadline = ContinuousClock.now + .milliseconds(100)
        deadlines.add(deadline)
        wakeup.signal()
        let limit = ContinuousClock.now + .seconds(30)
        while deadlines.fired.isEmpty, ContinuousClock.now < limit { try await Task.sleep(for: .milliseconds(20)) }
        #expect(deadlines.fired.count == 1)
        #expect(deadlines.fired.allSatisfy { $0 > deadline })
        #expect(deadlines.next == nil)
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
