import BlepayPayments
import BlepayProtocol
import Testing

/// A failure the business reports is confirmed with the ledger before the user hears it: a user told "failed" may pay
/// again, so a payment the ledger shows paid by this customer is finished, never shown failed.
@Suite struct FailureConfirmationTests {
    let p1 = PeerID(1)
    let ledgerKey = SigningKey()
    let r = Fixture.request(1)
    var id: PaymentID { r.paymentID }
    let a1 = Fixture.acceptance(of: Fixture.request(1), tip: 100)
    let declined = PaymentError(.insufficientFunds, "declined")

    func customerWhoAccepted() throws -> CustomerMachine { try Fixture.customerWhoAccepted(trusting: ledgerKey) }

    func businessSaysFailed(_ m: inout CustomerMachine) throws -> [CustomerAction] {
        let failed = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .failed(.insufficientFunds, detail: "declined")))
        return m.receive(failed, from: p1, at: Fixture.later(2_000))
    }

    @Test func aFailureThePaymentDidNotSufferIsNeverShown() throws {
        var m = try customerWhoAccepted()
        #expect(try businessSaysFailed(&m) == [.lookUpStatus(id)])
        #expect(m.snapshot(of: id)?.status == .accepted)
        let paid = try Receipt.settled(r, a1, transactionID: "tx-1", at: Fixture.later(1_500), signedBy: ledgerKey)
        #expect(m.ledgerAnswered(id, .executed(paid)) == [.emit(.finishedPayment(p1, paid))])
        #expect(m.snapshot(of: id)?.status == .finished)
    }

    @Test func aFailureTheLedgerConfirmsIsShown() throws {
        var m = try customerWhoAccepted()
        _ = try businessSaysFailed(&m)
        #expect(m.ledgerAnswered(id, .notExecuted(PaymentError(.rejected))) == [.emit(.error(p1, id, declined))])
        #expect(m.snapshot(of: id)?.status == .failed(.insufficientFunds))
    }

    @Test func whenTheLedgerCannotSayTheFailureIsShownAndThePaymentLookedUpOn() throws {
        var m = try customerWhoAccepted()
        _ = try businessSaysFailed(&m)
        #expect(m.ledgerAnswered(id, .unknown("the ledger has not finished the payment"))
            == [.emit(.error(p1, id, declined)), .lookUpStatus(id)])
        // A receipt that proves nothing changes nothing; the ledger's own receipt, found later, is reported.
        let forged = try Receipt.settled(r, a1, transactionID: "tx-1", at: Fixture.later(1_500), signedBy: SigningKey())
        #expect(m.ledgerAnswered(id, .executed(forged)) == [.lookUpStatus(id)])
        let paid = try Receipt.settled(r, a1, transactionID: "tx-1", at: Fixture.later(1_500), signedBy: ledgerKey)
        #expect(m.ledgerAnswered(id, .executed(paid)) == [.emit(.outcomeFound(p1, id, .success(paid)))])
    }

    @Test func anotherPayerFoundByTheLedgerIsOtherPaid() throws {
        var m = try customerWhoAccepted()
        _ = try businessSaysFailed(&m)
        let someoneElse = try Fixture.otherPayersAcceptance(of: r)
        let theirs = try Receipt.settled(r, someoneElse, transactionID: "tx-9", at: Fixture.later(1_500), signedBy: ledgerKey)
        #expect(m.ledgerAnswered(id, .executed(theirs)) == [.emit(.otherPaid(p1, id))])
    }

    @Test func aRepeatedFailureWhileConfirmingChangesNothing() throws {
        var m = try customerWhoAccepted()
        _ = try businessSaysFailed(&m)
        #expect(try businessSaysFailed(&m) == [])
        #expect(m.hasUnended)
    }
}
