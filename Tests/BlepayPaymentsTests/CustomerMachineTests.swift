import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for the customer machine: each input and the actions it must produce.
@Suite struct CustomerMachineTests {
    let p1 = PeerID(1), p2 = PeerID(2)

    func receiving(_ peers: PeerID...) -> CustomerMachine {
        var machine = CustomerMachine()
        machine.start()
        for peer in peers { _ = machine.connected(peer, Fixture.session) }
        return machine
    }

    @Test func aRegistrationReceivesManyPaymentsUntilStopped() throws {
        var m = receiving(p1, p2)
        let r1 = Fixture.request(1), r2 = Fixture.request(2), r3 = Fixture.request(3)
        #expect(m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0).events == [.receivedPayment(p1, r1)])
        #expect(try m.accept(r1.paymentID, amount: r1.amount, terms: Fixture.terms(tip: 100))
            == [.sendAcceptance(p1, r1, Fixture.terms(tip: 100), Fixture.session)])
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
        #expect(m.connected(p1, Fixture.session) == [.disconnect(p1)])
        #expect(m.stop().isEmpty)
    }

    @Test func cancellingDeclinesAndHidesTheRequestFromThatBusiness() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        #expect(try m.cancel(r.paymentID) == [
            .send(p1, .cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .userCancelled))),
            .emit(.cancelled(p1, r.paymentID, by: .customer)),
        ])
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).isEmpty)
        // Nor over a new connection to the same business.
        _ = m.connected(p2, Fixture.session)
        #expect(m.receive(.paymentRequest(r), from: p2, at: Fixture.t0).isEmpty)
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms()) } == .notFound)
        #expect(paymentError { _ = try m.cancel(r.paymentID) } == .notFound)
    }

    @Test func theBusinessCancelsAShownOrAcceptedPaymentOnce() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, amount: r2.amount, terms: Fixture.terms())
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
        _ = try m.accept(r2.paymentID, amount: r2.amount, terms: Fixture.terms())
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
        _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms())
        #expect(m.receive(failed, from: p1, at: Fixture.t0).events
            == [.error(p1, r.paymentID, PaymentError(.insufficientFunds, "balance 3.00"))])
        #expect(m.receive(failed, from: p1, at: Fixture.t0).isEmpty)
    }

    @Test func anAcceptanceMustMatchTheRequest() throws {
        var m = receiving(p1)
        let r = Fixture.request()
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        let terms = Fixture.terms()
        #expect(paymentError { _ = try m.accept(Fixture.id(9), amount: r.amount, terms: terms) } == .notFound)
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: Fixture.money(2549), terms: terms) }
            == .amountMismatch)
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: Fixture.money(2550, Fixture.usd), terms: terms) }
            == .amountMismatch)
        #expect(paymentError {
            _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms(tip: Money.maximumMinorUnits))
        } == .amountMismatch)
        let bad = AcceptanceTerms(tipMinorUnits: 0, instrumentID: "card 1", delegatedInstrument: true, acceptedAt: Fixture.t0)
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: r.amount, terms: bad) } == .invalidInstrument)
        #expect(paymentError {
            _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms(at: r.expiresAt))
        } == .expired)
        _ = try m.accept(r.paymentID, amount: r.amount, terms: terms)
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: r.amount, terms: terms) } == .alreadyPaid)
        #expect(paymentError { _ = try m.cancel(r.paymentID) } == .alreadyPaid)
    }

    @Test func aShownPaymentExpiresOnceAndAnAcceptedOneWaitsForTheBusinessThenForNoOne() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2)
        _ = m.receive(.paymentRequest(r1), from: p1, at: Fixture.t0)
        _ = m.receive(.paymentRequest(r2), from: p1, at: Fixture.t0)
        _ = try m.accept(r2.paymentID, amount: r2.amount, terms: Fixture.terms())
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
        #expect(m.acceptanceFailed(r.paymentID, noKey).isEmpty)  // not accepted: nothing to undo
        _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms())
        #expect(m.acceptanceFailed(r.paymentID, noKey) == [
            .send(p1, .cancelPayment(CancelPayment(paymentID: r.paymentID, reason: .userCancelled))),
            .emit(.error(p1, r.paymentID, noKey)),
        ])
        #expect(m.acceptanceFailed(r.paymentID, noKey).isEmpty)
    }

    @Test func repeatedRequestsAreNotShownAndALostLinkLetsTheNextOneShowItAgain() {
        var m = receiving(p1, p2)
        let r = Fixture.request()
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).events.count == 1)
        #expect(m.receive(.paymentRequest(r), from: p1, at: Fixture.t0).isEmpty)
        #expect(m.receive(.paymentRequest(r), from: p2, at: Fixture.t0).isEmpty)  // shown over p1 already
        #expect(m.receive(.paymentRequest(r), from: PeerID(9), at: Fixture.t0).isEmpty)  // not connected
        _ = m.disconnected(p1)
        #expect(m.receive(.paymentRequest(r), from: p2, at: Fixture.t0).events == [.receivedPayment(p2, r)])
        #expect(m.snapshot(of: r.paymentID) == PaymentSnapshot(request: r, peer: p2, status: .open, receipt: nil))
    }

    /// Clocks within the tolerance neither hide a request nor prolong it: its lifetime counts from its arrival. Past
    /// the tolerance, in either direction, it is refused as clock skew: the business hears it, the app sees it.
    @Test(arguments: [Int64(-299_000), 0, 299_000])
    func aClockWithinTheToleranceShowsTheRequestForItsLifetime(skew: Int64) throws {
        var m = receiving(p1)
        let r = Fixture.request()
        let now = Timestamp(millisecondsSince1970: UInt64(Int64(Fixture.t0.millisecondsSince1970) + skew))
        #expect(m.receive(.paymentRequest(r), from: p1, at: now).events == [.receivedPayment(p1, r)])
        #expect(m.tick(at: now.adding(milliseconds: Fixture.lifetime - 1)).isEmpty)
        _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms(at: now.adding(milliseconds: 1000)))
        #expect(m.snapshot(of: r.paymentID)?.status == .accepted)
    }

    @Test(arguments: [(UInt64(0), UInt64(300_001)), (420_001, 0)])
    func aRequestBeyondTheClockToleranceIsRefusedAsClockSkew(behind: UInt64, ahead: UInt64) throws {
        var m = receiving(p1)
        let r = Fixture.request()
        // `ahead`: the request is dated that far after this clock; `behind`: this clock is that far past its creation.
        let now = Timestamp(millisecondsSince1970: Fixture.t0.millisecondsSince1970 - ahead + behind)
        let actions = m.receive(.paymentRequest(r), from: p1, at: now)
        #expect(actions.sent.map(\.1) == [.error(try ErrorMessage(code: .clockSkew, paymentID: r.paymentID, detail: nil))])
        guard case .error(p1, r.paymentID, let error)? = actions.events.first, actions.events.count == 1 else {
            Issue.record("expected one error event, got \(actions.events)")
            return
        }
        #expect(error.code == .clockSkew)
        #expect(m.snapshot(of: r.paymentID)?.status == .failed(.clockSkew))
        #expect(paymentError { _ = try m.accept(r.paymentID, amount: r.amount, terms: Fixture.terms(at: now)) } == .notFound)
        #expect(m.receive(.paymentRequest(r), from: p1, at: now).isEmpty)
    }

    /// A request dated a century ahead is refused, not shown for ever.
    @Test func aRequestFromTheFarFutureIsRefused() throws {
        var m = receiving(p1)
        let future = Fixture.request(1, at: Fixture.later(100 * 365 * 24 * 3_600_000))
        #expect(m.receive(.paymentRequest(future), from: p1, at: Fixture.t0).events.map(\.terminalPayment)
            == [future.paymentID])
        #expect(m.snapshot(of: future.paymentID)?.status == .failed(.clockSkew))
        #expect(!m.hasUnended)
    }

    @Test func disconnectingEndsOpenPaymentsThenNothingMore() throws {
        var m = receiving(p1)
        let r1 = Fixture.request(1), r2 = Fixture.request(2), r3 = Fixture.request(3)
        for r in [r1, r2, r3] { _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0) }
        _ = try m.accept(r2.paymentID, amount: r2.amount, terms: Fixture.terms())
        _ = try m.cancel(r3.paymentID)
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
