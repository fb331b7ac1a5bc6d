import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for an offline business and a customer who can reach the ledger: the business picks the first
/// valid plain acceptance and sends that customer a go-ahead naming it; the customer executes, and the business
/// counts the payment finished only on a receipt it verifies offline with the ledger keys it holds.
@Suite struct CustomerExecutionTests {
    let p1 = PeerID(1), p2 = PeerID(2)
    let ledgerKey = SigningKey()
    let r: PaymentRequest
    var id: PaymentID { r.paymentID }

    init() {
        r = try! PaymentRequest(
            paymentID: Fixture.id(1), amount: Fixture.money(2550), reference: "order-1", merchantID: "m_cafe.42",
            merchantName: "Café", createdAt: Fixture.t0, expiresAt: Fixture.later(120_000), businessOnline: false,
            signature: Fixture.signature)
    }

    func business(trusting keys: TrustedLedgerKeys? = nil) throws -> BusinessMachine {
        var m = BusinessMachine(verifier: Verifier(), ledgerKeys: keys ?? TrustedLedgerKeys([ledgerKey.publicKey]))
        for peer in [p1, p2] { _ = m.connected(peer, Fixture.session, at: Fixture.t0) }
        _ = try m.request(r, at: Fixture.t0)
        return m
    }

    func acceptance(tip: UInt64 = 100, instrument: String = "card-1") -> PaymentAcceptance {
        Fixture.acceptance(of: r, tip: tip, instrument: instrument)
    }

    func receipt(_ acceptance: PaymentAcceptance, merchant: String? = nil, signer: SigningKey? = nil) throws -> Receipt {
        let request = try merchant.map { m in
            try PaymentRequest(
                paymentID: r.paymentID, amount: r.amount, reference: nil, merchantID: m, merchantName: "Other",
                createdAt: r.createdAt, expiresAt: r.expiresAt, businessOnline: false, signature: Fixture.signature)
        } ?? r
        return try Receipt.settled(request, acceptance, transactionID: "tx-1", at: Fixture.later(5_000), signedBy: signer ?? ledgerKey)
    }

    func result(_ receipt: Receipt) throws -> Message { .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt))) }
    func failure(_ code: PaymentErrorCode) throws -> Message {
        .paymentResult(try PaymentResult(paymentID: id, outcome: .failed(code, detail: nil)))
    }

    @Test func theWinnerIsToldToGoAheadAndItsVerifiedReceiptFinishesThePayment() throws {
        var m = try business()
        let a1 = acceptance()
        #expect(m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000)) == [
            .emit(.accepted(id, by: p1, total: Fixture.money(2650))),
            .send(p1, .goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash))),
        ])
        // Only one customer executes: a second acceptance waits for the outcome.
        #expect(m.receive(.paymentAcceptance(acceptance(tip: 0)), from: p2, at: Fixture.later(1_500)).isEmpty)
        #expect(m.snapshot(of: id)?.status == .accepted)
        let paid = try receipt(a1)
        // The winner made the result: it is not sent back; the other hears `otherPaid`.
        #expect(m.receive(try result(paid), from: p1, at: Fixture.later(6_000)) == [
            .send(p2, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p1, paid)),
        ])
        #expect(m.snapshot(of: id)?.receipt == paid && m.snapshot(of: id)?.status == .finished)
    }

    @Test func aResultFromAnyoneButTheWinnerOrBeforeTheGoAheadIsIgnored() throws {
        var m = try business()
        let a1 = acceptance()
        #expect(m.receive(try result(try receipt(a1)), from: p1, at: Fixture.later(500)).isEmpty)
        _ = m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000))
        #expect(m.receive(try result(try receipt(a1)), from: p2, at: Fixture.later(2_000)).isEmpty)
        #expect(m.snapshot(of: id)?.status == .accepted)
    }

    struct Forgery: Sendable, CustomTestStringConvertible {
        let name: String
        let make: @Sendable (CustomerExecutionTests, PaymentAcceptance) throws -> Receipt
        var testDescription: String { name }
    }

    static let forgeries: [Forgery] = [
        Forgery(name: "signed by a key the business does not trust") { try $0.receipt($1, signer: SigningKey()) },
        Forgery(name: "for another merchant") { try $0.receipt($1, merchant: "m_other") },
        Forgery(name: "paid by another customer") { t, a in
            try t.receipt(try PaymentAcceptance(
                paymentID: a.paymentID, amount: a.amount, tipMinorUnits: a.tipMinorUnits, instrumentID: a.instrumentID,
                delegatedInstrument: false, createdAt: a.createdAt, requestHash: a.requestHash, sessionHash: a.sessionHash,
                customerKey: SigningKey().publicKey, preAuthorization: nil, signature: a.signature))
        },
        Forgery(name: "for a smaller tip") { t, _ in try t.receipt(t.acceptance(tip: 0)) },
        Forgery(name: "pending, not settled") { t, a in try Receipt.pending(t.r, a, at: Fixture.later(5_000), signedBy: Fixture.merchantKey) },
    ]

    /// A receipt that does not prove this payment is the payer's failure: the request opens again, and the next
    /// customer gets the go-ahead.
    @Test(arguments: forgeries)
    func aReceiptThatDoesNotProveThePaymentReopensTheRequest(_ forgery: Forgery) throws {
        var m = try business()
        let a1 = acceptance()
        _ = m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000))
        let answer = m.receive(.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(forgery.make(self, a1)))),
            from: p1, at: Fixture.later(6_000))
        #expect(answer.events.map { event -> PaymentErrorCode? in if case .acceptanceRefused(_, p1, let e) = event { e.code } else { nil } } == [.securityFailure])
        #expect(answer.messages(to: p1).count == 1 && m.snapshot(of: id)?.status == .open)
        let a2 = acceptance(tip: 0)
        #expect(m.receive(.paymentAcceptance(a2), from: p2, at: Fixture.later(7_000))
            .contains(.send(p2, .goAhead(GoAhead(paymentID: id, acceptanceHash: a2.hash)))))
    }

    @Test func aFailureTheCustomerReportsIsItsOwnUnlessItEndsTheRequest() throws {
        var m = try business()
        _ = m.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(1_000))
        // The payer's funds, or its own ledger gone: the request stays open for the others.
        let refused = m.receive(try failure(.insufficientFunds), from: p1, at: Fixture.later(2_000))
        #expect(refused.events == [.acceptanceRefused(id, by: p1, PaymentError(.insufficientFunds))] && refused.sent.isEmpty)
        _ = m.receive(.paymentAcceptance(acceptance(tip: 0)), from: p2, at: Fixture.later(3_000))
        // The ledger says the request expired: it ends for everyone.
        let ended = m.receive(try failure(.expired), from: p2, at: Fixture.later(4_000))
        #expect(ended.events == [.failed(id, by: p2, PaymentError(.expired))] && ended.sent.isEmpty)
        #expect(m.snapshot(of: id)?.status == .failed(.expired))
    }

    /// The winner leaves, or stays silent past the request's expiry, after the go-ahead: it may have paid, so
    /// the payment is looked up at the ledger by id, never handed to someone else.
    @Test func aWinnerThatLeavesOrFallsSilentLeavesTheOutcomeToALookUp() throws {
        var m = try business()
        let a1 = acceptance()
        _ = m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000))
        #expect(m.disconnected(p1) == [.emit(.outcomePending(id)), .lookUpStatus(id)])
        let paid = try receipt(a1)
        #expect(m.ledgerAnswered(id, .executed(paid), at: Fixture.later(9_000)) == [
            .send(p2, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p1, paid)),
        ])

        var silent = try business()
        _ = silent.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(1_000))
        #expect(silent.tick(at: Fixture.later(120_000 + BusinessMachine.customerAnswerGraceMilliseconds - 1)).isEmpty)
        #expect(silent.tick(at: Fixture.later(120_000 + BusinessMachine.customerAnswerGraceMilliseconds))
            == [.emit(.outcomePending(id)), .lookUpStatus(id)])
        #expect(throws: PaymentError.self) { try silent.cancel(id) }
    }

    @Test func aBusinessWithoutALedgerKeyLetsNoCustomerExecute() throws {
        var m = BusinessMachine(verifier: Verifier())
        _ = m.connected(p1, Fixture.session, at: Fixture.t0)
        _ = try m.request(r, at: Fixture.t0)
        let answer = m.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(1_000))
        #expect(answer.events.map { event -> PaymentErrorCode? in if case .acceptanceRefused(_, _, let e) = event { e.code } else { nil } } == [.ledgerOffline])
    }

    // MARK: The customer's side

    func customer(showing request: PaymentRequest? = nil) -> CustomerMachine {
        var c = CustomerMachine()
        c.start()
        _ = c.connected(p1, Fixture.session)
        _ = c.receive(.paymentRequest(request ?? r), from: p1, at: Fixture.later(100))
        return c
    }

    @Test func theCustomerExecutesOnlyOnAGoAheadNamingItsAcceptanceAndCanSendTheResultAgain() throws {
        var c = customer()
        let actions = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        guard case .sendAcceptance = actions.first else { Issue.record("no acceptance asked for"); return }
        let a1 = acceptance()
        #expect(c.acceptanceSigned(a1) == [.send(p1, .paymentAcceptance(a1))])
        #expect(c.receive(.goAhead(GoAhead(paymentID: id, acceptanceHash: Fixture.hash)), from: p1, at: Fixture.later(1_000)).isEmpty)
        let go = Message.goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash))
        #expect(c.receive(go, from: PeerID(9), at: Fixture.later(1_000)).isEmpty)
        #expect(c.receive(go, from: p1, at: Fixture.later(1_000)) == [.execute(r, a1)])
        // Once only, however often it is told.
        #expect(c.receive(go, from: p1, at: Fixture.later(1_100)).isEmpty)
        let paid = try receipt(a1)
        #expect(c.ledgerAnswered(id, .executed(paid)) == [.send(p1, try result(paid)), .emit(.finishedPayment(p1, paid))])
        // A business that did not hear it asks again, and is answered with the same result.
        #expect(c.receive(go, from: p1, at: Fixture.later(9_000)) == [.send(p1, try result(paid))])
    }

    @Test func aGoAheadForAnOnlineRequestIsNotObeyed() throws {
        let online = Fixture.request(1)
        var c = customer(showing: online)
        _ = try c.accept(online.paymentID, amount: online.amount, terms: Fixture.terms(at: Fixture.later(500)))
        let a = Fixture.acceptance(of: online)
        _ = c.acceptanceSigned(a)
        #expect(c.receive(.goAhead(GoAhead(paymentID: online.paymentID, acceptanceHash: a.hash)), from: p1, at: Fixture.later(1_000)).isEmpty)
    }

    @Test func theLedgersRefusalIsToldToTheBusinessAndAnUnknownOutcomeIsLookedUp() throws {
        var c = customer()
        _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        let a1 = acceptance()
        _ = c.acceptanceSigned(a1)
        _ = c.receive(.goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash)), from: p1, at: Fixture.later(1_000))
        #expect(c.ledgerAnswered(id, .unknown("timed out")) == [.lookUpStatus(id)])
        let refused = c.ledgerAnswered(id, .notExecuted(PaymentError(.insufficientFunds)))
        #expect(refused == [.send(p1, try failure(.insufficientFunds)), .emit(.error(p1, id, PaymentError(.insufficientFunds)))])
    }

    @Test func aBusinessThatLeavesWhileTheCustomerExecutesEndsItAsUnknownUntilTheLedgerAnswers() throws {
        var c = customer()
        _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        let a1 = acceptance()
        _ = c.acceptanceSigned(a1)
        _ = c.receive(.goAhead(GoAhead(paymentID: id, acceptanceHash: a1.hash)), from: p1, at: Fixture.later(1_000))
        let gone = c.disconnected(p1)
        #expect(gone.events.map { event -> PaymentErrorCode? in if case .error(_, _, let e) = event { e.code } else { nil } } == [.outcomeUnknown, nil])
        // Its execution's answer is not looked up (it is on its way), and it is the outcome, found after the end.
        #expect(!gone.contains(.lookUpStatus(id)))
        let paid = try receipt(a1)
        #expect(c.ledgerAnswered(id, .executed(paid)) == [.emit(.outcomeFound(p1, id, .success(paid)))])
        #expect(c.snapshot(of: id)?.status == .finished && c.snapshot(of: id)?.receipt == paid)
        #expect(c.ledgerAnswered(id, .executed(paid)).isEmpty)
    }

    /// Both offline: the business's pending receipt is its signed acknowledgement; the customer checks it against the
    /// merchant's certificate and keeps its own copy of the pair, to settle it too.
    @Test func aPendingReceiptForAVoucherPaymentHasTheCustomerKeepItsCopy() throws {
        let voucher = try PreAuthorizationVoucher(
            voucherID: FixedBytes<Bytes8>(Array(repeating: 3, count: 8)), instrumentID: "card-1", customerKey: Fixture.key,
            limit: Fixture.money(10_000), issuedAt: Fixture.t0, expiresAt: Fixture.later(3_600_000),
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: Fixture.signature)
        let plain = acceptance()
        let presented = try PaymentAcceptance(
            paymentID: id, amount: r.amount, tipMinorUnits: 100, instrumentID: "card-1", delegatedInstrument: false,
            createdAt: Fixture.later(500), requestHash: Fixture.hash, sessionHash: Fixture.hash, customerKey: Fixture.key,
            preAuthorization: PreAuthorizationPresentation(voucher: voucher, sequence: 1, spentBeforeMinorUnits: 0),
            signature: Fixture.signature)
        var c = customer()
        _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
        _ = c.acceptanceSigned(presented)
        let pending = try Receipt.pending(r, presented, at: Fixture.later(1_000), signedBy: Fixture.merchantKey)
        #expect(c.receive(try result(pending), from: p1, at: Fixture.later(1_000))
            == [.keepForSettlement(r, presented), .emit(.finishedPayment(p1, pending))])
        #expect(c.snapshot(of: id)?.receipt == pending)

        // An acknowledgement the merchant did not sign, or of a plain acceptance, proves nothing: the customer hears
        // the failure and keeps nothing.
        for (signed, signer) in [(presented, SigningKey()), (plain, Fixture.merchantKey)] {
            var c = customer()
            _ = try c.accept(id, amount: r.amount, terms: Fixture.terms(tip: 100, at: Fixture.later(500)))
            _ = c.acceptanceSigned(signed)
            let forged = try Receipt.pending(r, signed, at: Fixture.later(1_000), signedBy: signer)
            let answer = c.receive(try result(forged), from: p1, at: Fixture.later(1_000))
            #expect(answer.events.map { event -> PaymentErrorCode? in
                if case .error(_, _, let e) = event { e.code } else { nil }
            } == [.securityFailure])
            #expect(!answer.contains { if case .keepForSettlement = $0 { true } else { false } })
        }
    }
}
