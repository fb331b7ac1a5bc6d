import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for a result lost with its link (`docs/protocol.md` §6.4c): the customer, who accepted and then
/// lost the connection, asks the same merchant for the result over its next connections, naming its acceptance by
/// hash; the business answers only that, and the customer learns the outcome as `outcomeFound`.
@Suite struct LostResultTests {
    let p1 = PeerID(1), p2 = PeerID(2), p3 = PeerID(3)
    let r = Fixture.request(1)
    var id: PaymentID { r.paymentID }
    let a1 = Fixture.acceptance(of: Fixture.request(1), tip: 100)

    /// A customer that accepted `r` over `p1` and is waiting for the result.
    func customerWhoAccepted() throws -> CustomerMachine {
        var m = CustomerMachine()
        m.start()
        _ = m.connected(p1, Fixture.session)
        _ = m.receive(.paymentRequest(r), from: p1, at: Fixture.t0)
        _ = try m.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100))
        #expect(m.acceptanceSigned(a1) == [.send(p1, .paymentAcceptance(a1))])
        return m
    }

    /// A customer that accepted `r` over `p1` and lost that link before the result.
    func customerWhoLostTheResult() throws -> CustomerMachine {
        var m = try customerWhoAccepted()
        #expect(m.disconnected(p1).events == [
            .error(p1, id, PaymentError(.outcomeUnknown, "disconnected after accepting; look the payment up by its id")),
            .disconnected(p1),
        ])
        return m
    }

    func query() -> Message { .resultQuery(ResultQuery(paymentID: id, acceptanceHash: a1.hash)) }

    func session(of merchant: String) throws -> PeerSession {
        let c = Fixture.certificate
        return PeerSession(version: 1, sessionHash: Fixture.hash, capabilities: [.online], certificate: try MerchantCertificate(
            merchantID: merchant, merchantName: "Other", signingKey: c.signingKey, noiseKey: c.noiseKey,
            validFrom: c.validFrom, validUntil: c.validUntil, ledgerKeyID: c.ledgerKeyID, signature: c.signature))
    }

    @Test func theCustomerAsksTheSameMerchantAgainAndLearnsTheOutcome() throws {
        var m = try customerWhoLostTheResult()
        // Another merchant's business is not asked; the same merchant's is, over the new connection.
        #expect(m.connected(p3, try session(of: "m_other")).isEmpty)
        #expect(m.connected(p2, Fixture.session) == [.send(p2, query())])
        let receipt = Fixture.receipt(for: a1)
        let result = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt)))
        // Only the connection asked answers.
        #expect(m.receive(result, from: p3, at: Fixture.later(5_000)).isEmpty)
        #expect(m.receive(result, from: p2, at: Fixture.later(5_000)) == [.emit(.outcomeFound(p2, id, .success(receipt)))])
        #expect(m.snapshot(of: id)?.status == .finished && m.snapshot(of: id)?.receipt == receipt)
        // Found: repeats change nothing, and later connections are not asked.
        #expect(m.receive(result, from: p2, at: Fixture.later(6_000)).isEmpty)
        #expect(m.connected(PeerID(4), Fixture.session).isEmpty)
    }

    @Test func aFailureFoundLateIsTheOutcomeAndTheQueriesStopAfterThree() throws {
        var m = try customerWhoLostTheResult()
        for n in 2...4 { #expect(m.connected(PeerID(UInt64(n)), Fixture.session) == [.send(PeerID(UInt64(n)), query())]) }
        #expect(m.connected(PeerID(5), Fixture.session).isEmpty)
        let failed = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .failed(.insufficientFunds, detail: nil)))
        // The answer counts on the connection last asked.
        #expect(m.receive(failed, from: PeerID(3), at: Fixture.later(5_000)).isEmpty)
        #expect(m.receive(failed, from: PeerID(4), at: Fixture.later(5_000))
            == [.emit(.outcomeFound(PeerID(4), id, .failure(PaymentError(.insufficientFunds))))])
        #expect(m.snapshot(of: id)?.status == .failed(.insufficientFunds))
    }

    /// A business that sent `r`, had `a1` accepted over `p1` and is executing it.
    func businessExecuting() throws -> BusinessMachine {
        var m = BusinessMachine(verifier: Verifier())
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        _ = try m.request(r, at: Fixture.t0)
        #expect(m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000)).executions == [a1])
        return m
    }

    @Test func theBusinessAnswersTheWinnersQueryOnlyWithItsResult() throws {
        var m = try businessExecuting()
        _ = m.disconnected(p1)
        let receipt = Fixture.receipt(for: a1)
        #expect(m.ledgerAnswered(id, .executed(receipt), at: Fixture.later(2_000)).events == [.finished(id, by: p1, receipt)])
        _ = m.connected(p2, Fixture.session, at: Fixture.later(3_000))
        // Anyone not holding the acceptance cannot have it: a query naming another hash is not answered.
        let forged = Message.resultQuery(ResultQuery(paymentID: id, acceptanceHash: Fixture.hash))
        #expect(m.receive(forged, from: p2, at: Fixture.later(4_000)).isEmpty)
        #expect(m.receive(query(), from: p2, at: Fixture.later(4_000))
            == [.send(p2, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt))))])
        #expect(m.receive(.resultQuery(ResultQuery(paymentID: Fixture.id(9), acceptanceHash: a1.hash)), from: p2,
            at: Fixture.later(4_000)).isEmpty)
    }

    @Test func aQueryWhileTheLedgerIsExecutingHasTheResultSentToTheNewConnection() throws {
        var m = try businessExecuting()
        _ = m.connected(p2, Fixture.session, at: Fixture.later(1_500))
        // The winner is still connected: its own link gets the result.
        #expect(m.receive(query(), from: p2, at: Fixture.later(1_600)).isEmpty)
        _ = m.disconnected(p1)
        #expect(m.receive(query(), from: p2, at: Fixture.later(1_700)).isEmpty)
        let receipt = Fixture.receipt(for: a1)
        let answered = m.ledgerAnswered(id, .executed(receipt), at: Fixture.later(2_000))
        #expect(answered.messages(to: p2) == [.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt)))])
        #expect(answered.events == [.finished(id, by: p2, receipt)])
    }
}

extension LostResultTests {
    /// The ledger is asked too, for as long as it takes: a settled receipt for this acceptance, or a refusal, is the
    /// outcome; a payment it does not know yet is asked for again; an unknown answer is asked again, without end.
    @Test func theLedgerIsAskedByPaymentIDAndItsAnswerIsTheOutcome() throws {
        var m = try customerWhoAccepted()
        #expect(m.disconnected(p1).contains(.lookUpStatus(id)))
        for _ in 0..<100 { #expect(m.ledgerAnswered(id, .unknown("unreachable")) == [.lookUpStatus(id)]) }
        #expect(m.ledgerAnswered(id, .notExecuted(PaymentError(.notFound))) == [.lookUpStatus(id)])
        // A receipt under this customer's key that is not what it accepted is not this one's outcome.
        let other = Fixture.acceptance(of: r, tip: 0)
        #expect(m.ledgerAnswered(id, .executed(Fixture.receipt(for: other))) == [.lookUpStatus(id)])
        let paid = Fixture.receipt(for: a1)
        #expect(m.ledgerAnswered(id, .executed(paid)) == [.emit(.outcomeFound(p1, id, .success(paid)))])
        #expect(m.snapshot(of: id)?.status == .finished)
        #expect(m.ledgerAnswered(id, .executed(paid)).isEmpty)
    }

    @Test func anotherPayersReceiptMeansThisCustomerDidNotPay() throws {
        var m = try customerWhoLostTheResult()
        let someoneElse = try PaymentAcceptance(
            paymentID: id, amount: r.amount, tipMinorUnits: 0, instrumentID: "card-9", delegatedInstrument: false,
            createdAt: Fixture.t0, requestHash: Fixture.hash, sessionHash: Fixture.hash,
            customerKey: try Key32(Array(repeating: 7, count: 32)), preAuthorization: nil, signature: Fixture.signature)
        #expect(m.ledgerAnswered(id, .executed(Fixture.receipt(for: someoneElse)))
            == [.emit(.outcomeFound(p1, id, .failure(PaymentError(.alreadyPaid, "another customer paid it"))))])
        #expect(m.snapshot(of: id)?.status == .otherPaid)
    }

    /// Not known to the ledger is not unpaid while the business may still execute the request: only once it has
    /// expired (by any clock within the tolerance) is the payment found unpaid, and an unknown answer meanwhile
    /// leaves it open.
    @Test func aPaymentTheLedgerDoesNotKnowIsFoundUnpaidOnlyOnceItCanNoLongerBeMade() throws {
        var m = try customerWhoLostTheResult()
        let payableUntil = Fixture.lifetime + CustomerMachine.clockToleranceMilliseconds
        #expect(m.ledgerAnswered(id, .notExecuted(PaymentError(.notFound))) == [.lookUpStatus(id)])
        #expect(m.tick(at: Fixture.later(payableUntil - 1)).isEmpty)
        #expect(m.ledgerAnswered(id, .unknown("unreachable")) == [.lookUpStatus(id)])
        #expect(m.tick(at: Fixture.later(payableUntil)).isEmpty)
        #expect(m.ledgerAnswered(id, .notExecuted(PaymentError(.notFound))) == [.lookUpStatus(id)])
        let unpaid = PaymentError(.notFound, "the ledger has no such payment, and it can no longer be made: nothing was charged")
        #expect(m.tick(at: Fixture.later(payableUntil)) == [.emit(.outcomeFound(p1, id, .failure(unpaid)))])
        #expect(m.snapshot(of: id)?.status == .failed(.notFound))
        #expect(m.tick(at: Fixture.later(payableUntil + 1)).isEmpty)
    }

    @Test func aBusinessSilentPastTheGraceIsAskedForTheResultToo() throws {
        var m = try customerWhoAccepted()
        let late = Fixture.later(Fixture.lifetime + CustomerMachine.answerGraceMilliseconds)
        #expect(m.tick(at: late) == [
            .emit(.error(p1, id, PaymentError(.outcomeUnknown, "no final answer; look the payment up by its id"))),
            .lookUpStatus(id),
        ])
        // The business's answer, late on the same connection, is the outcome.
        let failed = Message.paymentResult(try PaymentResult(paymentID: id, outcome: .failed(.insufficientFunds, detail: nil)))
        #expect(m.receive(failed, from: p1, at: late) == [.emit(.outcomeFound(p1, id, .failure(PaymentError(.insufficientFunds))))])
    }
}
