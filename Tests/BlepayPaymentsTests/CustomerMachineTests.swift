import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for the customer machine: each input and the actions it must produce.
@Suite struct CustomerMachineTests {
    let p1 = PeerID(1), p2 = PeerID(2)

    func receiving(_ peers: PeerID...) -> CustomerMachine {
        var machine = CustomerMachine()
        machine.start()
        for peer in peers { _ = machine.connected(peer) }
        return machine
    }

    @Test func aRegistrationReceivesManyPaymentsUntilStopped() throws {
        var m = receiving(p1, p2)
        let r1 = Fixture.request(1), r2 = Fixture.request(2), r3 = Fixture.request(3)
        #expect(m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0).events == [.receivedPayment(p1, r1)])
        #expect(try m.accept(r1.paymentID, from: p1, amount: r1.amount, terms: Fixture.terms(tip: 100))
            == [.sendAcceptance(p1, r1, Fixture.terms(tip: 100))])
        let receipt = Fixture.receipt(for: Fixture.acceptance(of: r1, tip: 100))
        let result = try PaymentResult(paymentID: r1.paymentID, outcome: .finished(receipt))
        #expect(m.receive(.paymentResult(result), from: p1, at: Fixture.t0).events == [.finishedPayment(p1, receipt)])
        #expect(m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0).events == [.receivedPayment(p1, r2)])
        #expect(m.receive(.paymentRequest(r3), from: p2, at: Fixture.t0).events == [.receivedPayment(p2, r3)])
        let stop = m.stop()
        #expect(stop.first == .stopAdvertising)
        #expect(stop.dropFirst() == [
            .disconnect(p1), .emit(.error(p1, r2.paymentID, PaymentError(.connectionFailed, "the business disconnected"))),
            .emit(.disconnected(p1)),
            .disconnect(p2), .emit(.error(p2, r3.paymentID, PaymentError(.connectionFailed, "the business disconnected"))),
            .emit(.disconnected(p2)),
        ])
        #expect(!m.isReceiving)
        #expect(m.receive(.paymentRequest(Fixture.request(4)), from: p1, at: Fixture.t0).isEmpty)
        #expect(m.connected(p1) == [.disconnect(p1)])
        #expect(m.stop().isEmpty)
    }

    @Test func cancellingDeclinesAndHidesTheRequestFromThatBusiness() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        #expect(try m.cancel(r.paymentID, from: p1) == [
            .send(p1, .cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .userCancelled))),
            .emit(.cancelled(p1, r.paymentID, by: .customer)),
        ])
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).isEmpty)
        // Nor over a new connection to the same business.
        _ = m.connected(p2)
        #expect(m.receive(.paymentRequest(r), from: p2, at: Fixture.t0).isEmpty)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: Fixture.terms()) } == .notFound)
        #expect(paymentError { _ = try m.cancel(r.paymentID, from: p1) } == .notFound)
    }

    @Test func theBusinessCancelsAShownOrAcceptedPaymentOnce() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, from: p1, amount: r2.amount, terms: Fixture.terms())
        for r in [r1, r2] {
            let cancel = Message.cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .userCancelled))
            #expect(m.receive(cancel, from: p1, at: Fixture.t0).events == [.cancelled(p1, r.paymentID, by: .business)])
            #expect(m.receive(cancel, from: p1, at: Fixture.t0).isEmpty)
        }
    }

    @Test func otherPaidEndsAShownOrAcceptedPayment() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, from: p1, amount: r2.amount, terms: Fixture.terms())
        for r in [r1, r2] {
            let other = Message.otherPaid(OtherPaid(paymentID: r.paymentID))
            #expect(m.receive(other, from: p1, at: Fixture.t0).events == [.otherPaid(p1, r.paymentID)])
            #expect(m.receive(other, from: p1, at: Fixture.t0).isEmpty)
        }
    }

    @Test func aFailedResultIsAnErrorAndOnlyAnAcceptedPaymentHasAResult() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let failed = Message.paymentResult(try PaymentResult(
            paymentID: r.paymentID, outcome: .failed(.insufficientFunds, detail: "balance 3.00")))
        #expect(m.receive(failed, from: p1, at: Fixture.t0).isEmpty)
        _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: Fixture.terms())
        #expect(m.receive(failed, from: p1, at: Fixture.t0).events
            == [.error(p1, r.paymentID, PaymentError(.insufficientFunds, "balance 3.00"))])
        #expect(m.receive(failed, from: p1, at: Fixture.t0).isEmpty)
    }

    @Test func anAcceptanceMustMatchTheRequest() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let terms = Fixture.terms()
        #expect(paymentError { _ = try m.accept(Fixture.id(9), from: p1, amount: r.amount, terms: terms) } == .notFound)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p2, amount: r.amount, terms: terms) } == .notFound)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p1, amount: Fixture.money(2549), terms: terms) }
            == .amountMismatch)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p1, amount: Fixture.money(2550, Fixture.usd), terms: terms) }
            == .amountMismatch)
        #expect(paymentError {
            _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: Fixture.terms(tip: Money.maximumMinorUnits))
        } == .amountMismatch)
        let bad = AcceptanceTerms(tipMinorUnits: 0, instrumentID: "card 1", delegatedInstrument: true, acceptedAt: Fixture.t0)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: bad) } == .invalidInstrument)
        #expect(paymentError {
            _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: Fixture.terms(at: r.expiresAt))
        } == .expired)
        _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: terms)
        #expect(paymentError { _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: terms) } == .alreadyPaid)
        #expect(paymentError { _ = try m.cancel(r.paymentID, from: p1) } == .alreadyPaid)
    }

    @Test func aShownPaymentExpiresOnceAndAnAcceptedOneWaitsForTheBusinessThenForNoOne() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, from: p1, amount: r2.amount, terms: Fixture.terms())
        #expect(m.tick(at: Fixture.later(Fixture.lifetime - 1)).isEmpty)
        #expect(m.tick(at: r1.expiresAt).events == [.error(p1, r1.paymentID, PaymentError(.expired))])
        let grace = CustomerMachine.answerGraceMilliseconds
        #expect(m.tick(at: r2.expiresAt.adding(milliseconds: grace - 1)).isEmpty)
        #expect(m.tick(at: r2.expiresAt.adding(milliseconds: grace)).events.map(\.terminalPayment) == [r2.paymentID])
        #expect(m.tick(at: r2.expiresAt.adding(milliseconds: grace * 2)).isEmpty)
        let late = Message.otherPaid(OtherPaid(paymentID: r2.paymentID))
        #expect(m.receive(late, from: p1, at: r2.expiresAt.adding(milliseconds: grace * 2)).isEmpty)
    }

    @Test func theBusinessSayingExpiredIsTheSameEventAsTheCustomersClock() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let expired = Message.cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .expired))
        #expect(m.receive(expired, from: p1, at: r.expiresAt).events == [.error(p1, r.paymentID, PaymentError(.expired))])
        #expect(m.tick(at: r.expiresAt).isEmpty)
    }

    @Test func anAcceptanceThatCannotBeSignedEndsThePaymentAndWithdrawsIt() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let noKey = PaymentError(.invalidCredentials, "no device key")
        #expect(m.acceptanceFailed(r.paymentID, from: p1, noKey).isEmpty)  // not accepted: nothing to undo
        _ = try m.accept(r.paymentID, from: p1, amount: r.amount, terms: Fixture.terms())
        #expect(m.acceptanceFailed(r.paymentID, from: p1, noKey) == [
            .send(p1, .cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .userCancelled))),
            .emit(.error(p1, r.paymentID, noKey)),
        ])
        #expect(m.acceptanceFailed(r.paymentID, from: p1, noKey).isEmpty)
    }

    @Test func expiredOrRepeatedRequestsAreNotShown() {
        var m = receiving(p1)
        let r = Fixture.request()
        #expect(m.receive(.paymentRequest(r), from: p1, at: r.expiresAt).isEmpty)
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).events.count == 1)
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).isEmpty)
        #expect(m.receive(.paymentRequest(r), from: p2, at: Fixture.t0).isEmpty)  // not connected
    }

    @Test func disconnectingEndsOpenPaymentsThenNothingMore() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2), r3 = Fixture.request(3)
        for r in [r1, r2, r3] { _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0) }
        _ = try m.accept(r2.paymentID, from: p1, amount: r2.amount, terms: Fixture.terms())
        _ = try m.cancel(r3.paymentID, from: p1)
        let events = m.disconnected(p1).events
        #expect(events.count == 3)
        #expect(events[0] == .error(p1, r1.paymentID, PaymentError(.connectionFailed, "the business disconnected")))
        guard case .error(p1, r2.paymentID, let unknown) = events[1] else {
            Issue.record("expected outcome-unknown for the accepted payment, got \(events[1])")
            return
        }
        #expect(unknown.code == .outcomeUnknown)
        #expect(events[2] == .disconnected(p1))
        #expect(m.disconnected(p1).isEmpty)
        #expect(m.receive(.otherPaid(OtherPaid(paymentID: r2.paymentID)), from: p1, at: Fixture.t0).isEmpty)
    }

    @Test func errorsFromTheBusiness() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let forPayment = try ErrorMessage(code: .expired, paymentID: r.paymentID, detail: nil)
        #expect(m.receive(.error(forPayment), from: p1, at: Fixture.t0).events == [.error(p1, r.paymentID, PaymentError(.expired))])
        let forSession = try ErrorMessage(code: .protocolViolation, paymentID: nil, detail: "bad frame")
        #expect(m.receive(.error(forSession), from: p1, at: Fixture.t0)
            == [.emit(.error(p1, nil, PaymentError(.protocolViolation, "bad frame"))), .disconnect(p1)])
        let acceptance = Message.paymentAcceptance(Fixture.acceptance(of: r))
        let actions = m.receive(acceptance, from: p1, at: Fixture.t0)
        #expect(actions.last == .disconnect(p1))
        guard case .error(p1, nil, let violation)? = actions.events.first else {
            Issue.record("expected a session error, got \(actions)")
            return
        }
        #expect(violation.code == .protocolViolation)
    }
}
