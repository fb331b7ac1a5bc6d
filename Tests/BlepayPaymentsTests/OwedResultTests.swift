import BlepayPayments
import BlepayProtocol
import Testing

/// A customer that executed an offline business's payment after its link had gone still owes the business the
/// ledger's receipt: it brings it over the merchant's next connections, and the business, which checks it offline
/// against the winner's acceptance, finishes the payment whoever carried it.
extension CustomerExecutionTests {
    @Test func aWinnerWhoseLinkWentBringsItsReceiptOverANewConnection() throws {
        var m = try business()
        let a1 = acceptance()
        _ = m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000))
        #expect(m.disconnected(p1) == [.emit(.outcomePending(id)), .lookUpStatus(id)])
        let p3 = PeerID(3)
        _ = m.connected(p3, Fixture.session, at: Fixture.later(2_000))
        // Nothing the ledger did not sign for this acceptance proves anything, whoever brings it.
        #expect(m.receive(try result(try receipt(a1, signer: SigningKey())), from: p3, at: Fixture.later(3_000)).isEmpty)
        #expect(m.receive(try result(try receipt(acceptance(tip: 0))), from: p3, at: Fixture.later(3_000)).isEmpty)
        #expect(m.receive(try failure(.insufficientFunds), from: p3, at: Fixture.later(3_000)).isEmpty)
        #expect(m.snapshot(of: id)?.status == .accepted)
        let paid = try receipt(a1)
        #expect(m.receive(try result(paid), from: p3, at: Fixture.later(4_000)) == [
            .send(p2, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p1, paid)),
        ])
        #expect(m.snapshot(of: id)?.status == .finished)
        #expect(m.receive(try result(paid), from: p3, at: Fixture.later(5_000)).isEmpty)
    }

    @Test func theCustomerSendsTheReceiptItOwesOnTheMerchantsNextThreeConnections() throws {
        var c = customer()
        _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        let a1 = acceptance()
        _ = c.acceptanceSigned(a1)
        _ = c.receive(.goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash)), from: p1, at: Fixture.later(1_000))
        _ = c.disconnected(p1)
        let paid = try receipt(a1)
        _ = c.ledgerAnswered(id, .executed(paid))
        let other = PeerSession(version: 1, sessionHash: Fixture.hash, capabilities: [], certificate: try MerchantCertificate(
            merchantID: "m_other", merchantName: "Other", signingKey: Fixture.key, noiseKey: Fixture.key,
            validFrom: Fixture.t0, validUntil: Fixture.later(3_600_000), ledgerKeyID: FixedBytes(Array(repeating: 2, count: 8)),
            signature: Fixture.signature))
        #expect(c.connected(PeerID(2), other).isEmpty)
        for n in UInt64(3)...5 { #expect(c.connected(PeerID(n), Fixture.session) == [.send(PeerID(n), try result(paid))]) }
        #expect(c.connected(PeerID(6), Fixture.session).isEmpty)
    }

    @Test func aReceiptSentOverTheLiveLinkIsNotSentAgain() throws {
        var c = customer()
        _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        let a1 = acceptance()
        _ = c.acceptanceSigned(a1)
        _ = c.receive(.goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash)), from: p1, at: Fixture.later(1_000))
        _ = c.ledgerAnswered(id, .executed(try receipt(a1)))
        _ = c.disconnected(p1)
        #expect(c.connected(PeerID(2), Fixture.session).isEmpty)
    }
}
