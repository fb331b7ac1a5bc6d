import BlepayProtocol
import Testing

/// A link says when it next needs the clock: the handshake's end until established, a record in progress's
/// reassembly time-out, and nothing while idle, so that its transport needs no timer then.
@Suite struct LinkDeadlineTests {
    @Test func aHandshakeHasADeadlineAndAnIdleSessionNone() throws {
        let start = LinkTests.start
        let link = try Link(customer: Parties.customer(), mtu: 23, at: start)
        #expect(link.nextDeadline == start + Link.handshakeTimeout)
        var pair = try LinkTests.Pair()
        pair.establish()
        #expect(pair.customer.nextDeadline == nil && pair.business.nextDeadline == nil)
    }

    @Test func aRecordInProgressTimesOutPastItsDeadline() throws {
        var pair = try LinkTests.Pair()
        pair.establish()
        let fragments = pair.business.send(.paymentRequest(Parties.request())).compactMap { action -> [UInt8]? in
            if case .transmit(let fragment) = action { fragment } else { nil }
        }
        let received = LinkTests.start + .seconds(20)
        #expect(pair.customer.receive(fragments[0], at: received, now: Parties.now) == [])
        let deadline = try #require(pair.customer.nextDeadline)
        #expect(deadline == received + Framing.reassemblyTimeout)
        #expect(pair.customer.tick(at: deadline) == [])
        let closed = pair.customer.tick(at: deadline + .milliseconds(1))
        #expect(closed.contains { if case .close = $0 { true } else { false } })
        #expect(pair.customer.nextDeadline == nil)
    }
}
