import BlepayPayments
import BlepayProtocol
import Testing

/// A merchant whose business key the ledger's deny list names (a revoked device, a blocked merchant) is refused by
/// the customer at its connection, whether or not the customer can reach the ledger; only a newer list changes that.
@Suite struct RevokedMerchantTests {
    let p1 = PeerID(1)

    func denyList(at time: Timestamp, denying keys: [Key32]) -> DenyList {
        DenyList(issuedAt: time, voidedVouchers: [], blockedKeys: keys, ledgerKeyID: Fixture.certificate.ledgerKeyID,
            signature: Fixture.signature)
    }

    @Test func aMerchantTheLedgerRevokedIsRefusedAtItsConnection() {
        var m = CustomerMachine()
        m.start()
        m.denyListReceived(denyList(at: Fixture.t0, denying: [Fixture.merchantKey.publicKey]))
        #expect(m.connected(p1, Fixture.session) == [
            .emit(.error(p1, nil, PaymentError(.securityFailure, "the ledger revoked this merchant's business key"))),
            .disconnect(p1),
        ])
        // Nothing it sends is shown, and its link's end says nothing more.
        #expect(m.receive(.paymentRequest(Fixture.request(1)), from: p1, at: Fixture.t0) == [])
        #expect(m.snapshot(of: Fixture.request(1).paymentID) == nil)
        #expect(m.disconnected(p1) == [])
    }

    @Test func onlyANewerListLiftsIt() {
        var m = CustomerMachine()
        m.start()
        m.denyListReceived(denyList(at: Fixture.later(1_000), denying: [Fixture.merchantKey.publicKey]))
        m.denyListReceived(denyList(at: Fixture.t0, denying: []))
        #expect(m.connected(p1, Fixture.session).contains(.disconnect(p1)))
        m.denyListReceived(denyList(at: Fixture.later(2_000), denying: []))
        #expect(m.connected(PeerID(2), Fixture.session) == [])
        #expect(m.receive(.paymentRequest(Fixture.request(1)), from: PeerID(2), at: Fixture.t0)
            == [.emit(.receivedPayment(PeerID(2), Fixture.request(1)))])
    }

    @Test func otherMerchantsAreUnaffected() {
        var m = CustomerMachine()
        m.start()
        m.denyListReceived(denyList(at: Fixture.t0, denying: [SigningKey().publicKey]))
        #expect(m.connected(p1, Fixture.session) == [])
    }
}
