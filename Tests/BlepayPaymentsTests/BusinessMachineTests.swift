import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for the business machine: broadcast, first valid acceptance wins, and every ledger outcome.
@Suite struct BusinessMachineTests {
    let p1 = PeerID(1), p2 = PeerID(2), p3 = PeerID(3)
    let r = Fixture.request()
    var id: PaymentID { r.paymentID }

    func open(_ peers: PeerID...) throws -> BusinessMachine {
        var m = BusinessMachine(verifier: Verifier())
        for peer in peers { _ = m.connected(peer, Fixture.session, at: Fixture.t0) }
        _ = try m.request(r, at: Fixture.t0)
        return m
    }

    @Test func aRequestIsOfferedToEveryConnectedCustomerAndToLateComers() throws {
        var m = BusinessMachine(verifier: Verifier())
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        _ = m.connected(p2, Fixture.session, at: Fixture.t0)
        #expect(try m.request(r, at: Fixture.t0) == [
            .send(p1, .paymentRequest(r)), .emit(.offered(id, p1)), .send(p2, .paymentRequest(r)), .emit(.offered(id, p2)),
        ])
        #expect(m.connected(p3, Fixture.session, at: Fixture.later(1_000)) == [.send(p3, .paymentRequest(r)), .emit(.offered(id, p3))])
        #expect(m.connected(p3, Fixture.session, at: Fixture.later(1_000)).isEmpty)
        #expect(m.connected(PeerID(4), Fixture.session, at: r.expiresAt).isEmpty)
        #expect(paymentError { _ = try m.request(r, at: Fixture.t0) } == .alreadyPaid)
        #expect(paymentError { _ = try m.request(Fixture.request(2), at: Fixture.later(Fixture.lifetime)) } == .expired)
    }

    @Test func theFirstValidAcceptanceWinsAndTheOthersHearOtherPaid() throws {
        var m = try open(p1, p2, p3)
        let a2 = Fixture.acceptance(of: r, tip: 300)
        #expect(m.receive(.paymentAcceptance(a2), from: p2, at: Fixture.t0)
            == [.emit(.accepted(id, by: p2, total: Fixture.money(2850))), .execute(r, a2)])
        // Arriving together: the second is neither executed nor answered yet.
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: Fixture.t0).isEmpty)
        #expect(m.receive(.paymentAcceptance(a2), from: p2, at: Fixture.t0).isEmpty)
        let receipt = Fixture.receipt(for: a2)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.t0) == [
            .send(p2, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt)))),
            .send(p1, .otherPaid(OtherPaid(paymentID: id))), .send(p3, .otherPaid(OtherPaid(paymentID: id))),
            .emit(.finished(id, by: p2, receipt)),
        ])
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.t0).isEmpty)
        // The winner asking again (its result lost) gets the same result, not an error.
        #expect(m.receive(.paymentAcceptance(a2), from: p2, at: Fixture.t0)
            == [.send(p2, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt))))])
        let late = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p3, at: Fixture.t0)
        #expect(late.events == [.acceptanceRefused(id, by: p3, PaymentError(.alreadyPaid, "the payment has ended"))])
        #expect(late.executions.isEmpty)
    }

    @Test func acceptancesThatDoNotMatchAreRefusedAndTheRequestStaysOpen() throws {
        var m = try open(p1, p2, p3)
        let wrongAmount = m.receive(.paymentAcceptance(Fixture.acceptance(of: r, amount: Fixture.money(100))), from: p1, at: Fixture.t0)
        #expect(wrongAmount.first == .send(p1, .paymentResult(try PaymentResult(
            paymentID: id, outcome: .failed(.amountMismatch, detail: nil)))))
        #expect(wrongAmount.executions.isEmpty)
        let wrongCurrency = m.receive(
            .paymentAcceptance(Fixture.acceptance(of: r, amount: Fixture.money(2550, Fixture.usd))), from: p2, at: Fixture.t0)
        #expect(wrongCurrency.events == [.acceptanceRefused(id, by: p2, PaymentError(.amountMismatch, "accepted 25.50 USD"))])
        let forged = m.receive(.paymentAcceptance(Fixture.acceptance(of: r, instrument: "forged-1")), from: p3, at: Fixture.t0)
        #expect(forged.events == [.acceptanceRefused(id, by: p3, PaymentError(.securityFailure, "bad signature"))])
        // Refused customers are no longer offered it; a new one can still pay.
        let p4 = PeerID(4)
        _ = m.connected(p4, Fixture.session, at: Fixture.t0)
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p4, at: Fixture.t0).executions.count == 1)
    }

    @Test func acceptancesForUnknownOrUnofferedPaymentsAreRefused() throws {
        var m = try open(p1)
        let unknown = Fixture.acceptance(of: Fixture.request(7))
        #expect(m.receive(.paymentAcceptance(unknown), from: p1, at: Fixture.t0) == [
            .send(p1, .error(try ErrorMessage(code: .notFound, paymentID: unknown.paymentID, detail: nil))),
            .emit(.acceptanceRefused(unknown.paymentID, by: p1, PaymentError(.notFound))),
        ])
        #expect(m.receive(.paymentAcceptance(unknown), from: p2, at: Fixture.t0).isEmpty)  // not connected
    }

    @Test func anAcceptanceAfterExpiryExpiresTheRequest() throws {
        var m = try open(p1, p2)
        let actions = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: r.expiresAt)
        #expect(actions.executions.isEmpty)
        #expect(actions.events == [.expired(id), .acceptanceRefused(id, by: p1, PaymentError(.expired))])
        #expect(actions.messages(to: p2) == [.cancelPayment(CancelPayment(paymentID: id, reason: .expired))])
    }

    @Test func aCustomerDeclinesAndCancelRacingAcceptIsResolvedByOrder() throws {
        var m = try open(p1, p2)
        let cancel = Message.cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled))
        #expect(m.receive(cancel, from: p1, at: Fixture.t0) == [.emit(.declined(id, by: p1))])
        #expect(m.receive(cancel, from: p1, at: Fixture.t0).isEmpty)
        // An acceptance after its own cancel is refused.
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: Fixture.t0).executions.isEmpty)
        // The winner's cancel after its acceptance does not stop the ledger.
        _ = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p2, at: Fixture.t0)
        #expect(m.receive(cancel, from: p2, at: Fixture.t0).isEmpty)
        #expect(paymentError { _ = try m.cancel(id) } == .alreadyPaid)
    }

    @Test func theBusinessCancelsOpenRequestsOnly() throws {
        var m = try open(p1, p2)
        let cancel = Message.cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled))
        #expect(try m.cancel(id) == [.send(p1, cancel), .send(p2, cancel), .emit(.cancelled(id))])
        #expect(paymentError { _ = try m.cancel(id) } == .notFound)
        #expect(paymentError { _ = try m.cancel(Fixture.id(9)) } == .notFound)
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: Fixture.t0).events
            == [.acceptanceRefused(id, by: p1, PaymentError(.userCancelled, "the payment has ended"))])
        #expect(m.connected(p3, Fixture.session, at: Fixture.t0).isEmpty)
    }

    @Test(arguments: [PaymentErrorCode.expired, .alreadyPaid, .notFound, .ledgerOffline, .ledgerError])
    func aRefusalOfTheRequestEndsItForEveryone(code: PaymentErrorCode) throws {
        var m = try open(p1, p2, p3)
        _ = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: Fixture.t0)
        // Only the winner learns why; the others, that the request was withdrawn, even if they accepted too.
        _ = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p3, at: Fixture.t0)
        let withdrawn = Message.cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled))
        #expect(m.ledgerAnswered(id, .notExecuted(PaymentError(code)), at: Fixture.t0) == [
            .send(p1, .paymentResult(try PaymentResult(paymentID: id, outcome: .failed(code, detail: nil)))),
            .send(p2, withdrawn), .send(p3, withdrawn), .emit(.failed(id, by: p1, PaymentError(code))),
        ])
        let late = m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p2, at: Fixture.t0)
        #expect(late.events == [.acceptanceRefused(id, by: p2, PaymentError(.userCancelled, "the payment has ended"))])
        #expect(m.snapshot(of: id)?.status == .failed(code))
    }

    /// A throw-away key that accepts first (the ledger knows no such account), or a customer with no funds, fails
    /// only its own acceptance: the request stays open and a genuine customer still pays it.
    @Test(arguments: [PaymentErrorCode.invalidInstrument, .insufficientFunds, .limitExceeded, .blocked, .rejected,
        .invalidCredentials, .preAuthorizationInvalid, .securityFailure, .amountMismatch])
    func aRefusalOfThePayerFailsOnlyItsAcceptance(code: PaymentErrorCode) throws {
        var m = try open(p1, p2, p3)
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p1, at: Fixture.t0).executions.count == 1)
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p2, at: Fixture.t0).isEmpty)  // too late
        let refusal = PaymentError(code, "unknown-account")
        #expect(m.ledgerAnswered(id, .notExecuted(refusal), at: Fixture.t0) == [
            .send(p1, .paymentResult(try PaymentResult(paymentID: id, outcome: .failed(code, detail: nil)))),
            .emit(.acceptanceRefused(id, by: p1, refusal)),
        ])
        #expect(m.snapshot(of: id)?.status == .open)
        // p1 is not offered it again on this link; p2, whose acceptance came during the execution, accepts again.
        #expect(m.connected(p1, Fixture.session, at: Fixture.t0).isEmpty)
        let honest = Fixture.acceptance(of: r, tip: 100)
        #expect(m.receive(.paymentAcceptance(honest), from: p2, at: Fixture.t0)
            == [.emit(.accepted(id, by: p2, total: Fixture.money(2650))), .execute(r, honest)])
        let receipt = Fixture.receipt(for: honest)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.t0) == [
            .send(p2, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt)))),
            .send(p3, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p2, receipt)),
        ])
    }

    /// A ledger answer whose receipt names another payment (or another amount) is no result: it is looked up.
    @Test func aReceiptOfAnotherPaymentIsNotAResult() throws {
        var m = try open(p1, p2)
        let a = Fixture.acceptance(of: r)
        _ = m.receive(.paymentAcceptance(a), from: p1, at: Fixture.t0)
        let other = Fixture.receipt(for: Fixture.acceptance(of: Fixture.request(7)))
        #expect(m.ledgerAnswered(id, .executed(other), at: Fixture.t0) == [.emit(.outcomePending(id)), .lookUpStatus(id)])
        let tipped = Fixture.receipt(for: Fixture.acceptance(of: r, tip: 1))
        #expect(m.ledgerAnswered(id, .executed(tipped), at: Fixture.t0) == [.lookUpStatus(id)])
        #expect(m.snapshot(of: id)?.status == .accepted)
        #expect(m.ledgerAnswered(id, .executed(Fixture.receipt(for: a)), at: Fixture.t0).events
            == [.finished(id, by: p1, Fixture.receipt(for: a))])
    }

    /// A customer that refuses a request (its clock is off) leaves the offer, and the business hears why.
    @Test func aCustomersErrorAboutARequestIsReported() throws {
        var m = try open(p1, p2)
        let skew = try ErrorMessage(code: .clockSkew, paymentID: id, detail: nil)
        #expect(m.receive(.error(skew), from: p1, at: Fixture.t0) == [.emit(.customerRefused(id, by: p1, PaymentError(.clockSkew)))])
        #expect(m.receive(.error(skew), from: p1, at: Fixture.t0).isEmpty)
        let acceptance = Fixture.acceptance(of: r)
        #expect(m.receive(.paymentAcceptance(acceptance), from: p1, at: Fixture.t0).events
            == [.acceptanceRefused(id, by: p1, PaymentError(.notFound, "the payment was not offered on this connection"))])
        let receipt = Fixture.receipt(for: acceptance)
        _ = m.receive(.paymentAcceptance(acceptance), from: p2, at: Fixture.t0)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.t0).messages(to: p1).isEmpty)
    }

    @Test func tipsAboveTheMerchantsLimitAreRefused() throws {
        var m = BusinessMachine(verifier: Verifier(), maximumTipPercent: 20)
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        _ = m.connected(p2, Fixture.session, at: Fixture.t0)
        _ = try m.request(r, at: Fixture.t0)
        let greedy = m.receive(.paymentAcceptance(Fixture.acceptance(of: r, tip: 511)), from: p1, at: Fixture.t0)
        #expect(greedy.events == [.acceptanceRefused(id, by: p1, PaymentError(.amountMismatch, "a tip over 20% of the amount"))])
        #expect(greedy.executions.isEmpty)
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r, tip: 510)), from: p2, at: Fixture.t0).executions.count == 1)
    }

    @Test func anUnknownOutcomeIsLookedUpNeverExecutedAgain() throws {
        var m = try open(p1, p2)
        let a = Fixture.acceptance(of: r)
        var executions = m.receive(.paymentAcceptance(a), from: p1, at: Fixture.t0).executions.count
        #expect(m.ledgerAnswered(id, .unknown("timeout"), at: Fixture.t0) == [.emit(.outcomePending(id)), .lookUpStatus(id)])
        #expect(m.ledgerAnswered(id, .unknown("still unreachable"), at: Fixture.t0) == [.lookUpStatus(id)])
        executions += m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p2, at: Fixture.t0).executions.count
        #expect(m.tick(at: r.expiresAt).isEmpty)  // executing: the clock does not end it
        let receipt = Fixture.receipt(for: a)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: r.expiresAt).events == [.finished(id, by: p1, receipt)])
        #expect(executions == 1)
    }

    @Test func customersWhoLeftAreNotWrittenToAndTheWinnersPaymentStillFinishes() throws {
        var m = try open(p1, p2, p3)
        let a = Fixture.acceptance(of: r)
        m.disconnected(p2)  // before accepting anything
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: r)), from: p2, at: Fixture.t0).isEmpty)
        _ = m.receive(.paymentAcceptance(a), from: p1, at: Fixture.t0)
        m.disconnected(p1)  // after accepting
        let receipt = Fixture.receipt(for: a)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.t0)
            == [.send(p3, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p1, receipt))])
    }

    @Test func openRequestsExpireAndEndedOnesAreRememberedUpToTheCapacity() throws {
        var m = try open(p1)
        #expect(m.tick(at: Fixture.later(Fixture.lifetime - 1)).isEmpty)
        #expect(m.tick(at: r.expiresAt) == [.send(p1, .cancelPayment(CancelPayment(paymentID: id, reason: .expired))), .emit(.expired(id))])
        #expect(m.tick(at: r.expiresAt).isEmpty)
        #expect(paymentError { _ = try m.cancel(id) } == .notFound)
        #expect(m.snapshot(of: id)?.status == .expired)
        let later = r.expiresAt.adding(milliseconds: 10 * 60 * 1000)
        #expect(paymentError { _ = try m.request(Fixture.request(1, at: later), at: later) } == .alreadyPaid)
        // A thousand newer payments push the oldest ended one out; open ones stay whatever their age.
        var open = try PaymentRequest(
            paymentID: Fixture.id(200), amount: Fixture.money(1), reference: nil, merchantID: "m_cafe.42", merchantName: "Café",
            createdAt: later, expiresAt: later.adding(milliseconds: 900_000), businessOnline: true,
            signature: Fixture.signature)
        _ = try m.request(open, at: later)
        for n in 0..<1000 {
            let next = try PaymentRequest(
                paymentID: .random(), amount: Fixture.money(1), reference: nil, merchantID: "m_cafe.42",
                merchantName: "Café", createdAt: later, expiresAt: later.adding(milliseconds: 1), businessOnline: true,
                signature: Fixture.signature)
            _ = try m.request(next, at: later)
            _ = m.tick(at: later.adding(milliseconds: UInt64(n) + 1))
        }
        #expect(m.snapshot(of: id) == nil)
        #expect(m.snapshot(of: open.paymentID)?.status == .open)
        #expect(m.snapshots.count == 1000)
        open = Fixture.request(1, at: later)
        #expect(throws: Never.self) { _ = try m.request(open, at: later) }
    }

    @Test func messagesACustomerMustNotSendAreIgnored() throws {
        var m = try open(p1)
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).isEmpty)
        #expect(m.receive(.otherPaid(OtherPaid(paymentID: id)), from: p1, at: Fixture.t0).isEmpty)
    }
}
