import BlepayPayments
import BlepayProtocol
import Testing

/// With the ledger's keys configured, neither side shows a payment paid on a receipt the ledger did not sign for
/// that payer and total, whoever brought it: the business's own ledger answer (which crossed the network), or the
/// result a business sends its customer. Such a receipt is no outcome: the payment is looked up by its id.
@Suite struct ReceiptTrustTests {
    let p1 = PeerID(1)
    let ledgerKey = SigningKey()
    let r = Fixture.request(1)
    var id: PaymentID { r.paymentID }
    let a1 = Fixture.acceptance(of: Fixture.request(1), tip: 100)

    func receipt(signedBy key: SigningKey? = nil) throws -> Receipt {
        try Receipt.settled(r, a1, transactionID: "tx-1", at: Fixture.later(2_000), signedBy: key ?? ledgerKey)
    }

    @Test func theBusinessFinishesAPaymentOnlyOnAReceiptItsLedgerSigned() throws {
        var m = BusinessMachine(verifier: Verifier(), ledgerKeys: TrustedLedgerKeys([ledgerKey.publicKey]))
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        _ = try m.request(r, at: Fixture.t0)
        #expect(m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000)).executions == [a1])
        let forged = m.ledgerAnswered(id, .executed(try receipt(signedBy: SigningKey())), at: Fixture.later(2_000))
        #expect(forged.events == [.outcomePending(id)] && forged.contains(.lookUpStatus(id)))
        let paid = try receipt()
        #expect(m.ledgerAnswered(id, .executed(paid), at: Fixture.later(3_000)).events == [.finished(id, by: p1, paid)])
    }

    func customerWhoAccepted() throws -> CustomerMachine { try Fixture.customerWhoAccepted(trusting: ledgerKey) }

    @Test func theCustomerShowsPaidOnlyOnAReceiptTheLedgerSigned() throws {
        var m = try customerWhoAccepted()
        let forged = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(try receipt(signedBy: SigningKey()))))
        #expect(m.receive(forged, from: p1, at: Fixture.later(2_000)) == [
            .emit(.error(p1, id, PaymentError(.outcomeUnknown, "the business's receipt does not prove the payment; look it up by its id"))),
            .lookUpStatus(id),
        ])
        // Nor does the ledger's look-up answer count unless the ledger signed it: the ledger is asked again.
        #expect(m.ledgerAnswered(id, .executed(try receipt(signedBy: SigningKey()))) == [.lookUpStatus(id)])
        let paid = try receipt()
        #expect(m.ledgerAnswered(id, .executed(paid)) == [.emit(.outcomeFound(p1, id, .success(paid)))])
    }

    @Test func aReceiptTheLedgerSignedFinishesThePaymentAtOnce() throws {
        var m = try customerWhoAccepted()
        let paid = try receipt()
        let result = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(paid)))
        #expect(m.receive(result, from: p1, at: Fixture.later(2_000)) == [.emit(.finishedPayment(p1, paid))])
    }

    @Test func anotherPayersReceiptMeansNotPaidOnlyIfTheLedgerSignedIt() throws {
        var m = try customerWhoAccepted()
        _ = m.disconnected(p1)
        let someoneElse = try Fixture.otherPayersAcceptance(of: r)
        let forged = try Receipt.settled(r, someoneElse, transactionID: "tx-9", at: Fixture.later(2_000), signedBy: SigningKey())
        #expect(m.ledgerAnswered(id, .executed(forged)) == [.lookUpStatus(id)])
        let genuine = try Receipt.settled(r, someoneElse, transactionID: "tx-9", at: Fixture.later(2_000), signedBy: ledgerKey)
        #expect(m.ledgerAnswered(id, .executed(genuine))
            == [.emit(.outcomeFound(p1, id, .failure(PaymentError(.alreadyPaid, "another customer paid it"))))])
    }
}
