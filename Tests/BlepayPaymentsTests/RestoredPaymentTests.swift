import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for payments accepted before a restart whose outcome was never learnt (`CustomerMachine.restore`):
/// each is sought again, from the ledger and from its merchant's next connection, as a result lost with its link.
@Suite struct RestoredPaymentTests {
    let r1 = Fixture.request(1), r2 = Fixture.request(2)
    let a1 = Fixture.acceptance(of: Fixture.request(1), tip: 100)
    let a2 = Fixture.acceptance(of: Fixture.request(2))

    func restored(_ kept: [KeptPayment]) -> (CustomerMachine, [CustomerAction]) {
        var m = CustomerMachine()
        m.start()
        let actions = m.restore(kept)
        return (m, actions)
    }

    @Test func eachRestoredPaymentIsLookedUpOldestFirstAndItsOutcomeNamesNoConnection() throws {
        let kept = [
            KeptPayment(request: r2, acceptance: a2, keptAt: Fixture.later(2_000)),
            KeptPayment(request: r1, acceptance: a1, keptAt: Fixture.later(1_000)),
        ]
        var (m, actions) = restored(kept)
        #expect(actions == [.lookUpStatus(r1.paymentID), .lookUpStatus(r2.paymentID)])
        #expect(m.snapshot(of: r1.paymentID)?.status == .failed(.outcomeUnknown))
        #expect(m.restore(kept).isEmpty)
        let paid = Fixture.receipt(for: a1)
        #expect(m.ledgerAnswered(r1.paymentID, .executed(paid)) == [.emit(.outcomeFound(.none, r1.paymentID, .success(paid)))])
        #expect(m.ledgerAnswered(r2.paymentID, .notExecuted(PaymentError(.insufficientFunds)))
            == [.emit(.outcomeFound(.none, r2.paymentID, .failure(PaymentError(.insufficientFunds))))])
        #expect(!m.hasUnended)
    }

    @Test func theMerchantsNextConnectionIsAskedAndItsAnswerIsTheOutcome() throws {
        var (m, _) = restored([KeptPayment(request: r1, acceptance: a1, keptAt: Fixture.later(1_000))])
        let p1 = PeerID(1)
        #expect(m.connected(p1, Fixture.session)
            == [.send(p1, .resultQuery(ResultQuery(paymentID: r1.paymentID, acceptanceHash: a1.hash)))])
        let paid = Fixture.receipt(for: a1)
        let result = Message.paymentResult(try PaymentResult(paymentID: r1.paymentID, outcome: .finished(paid)))
        #expect(m.receive(result, from: p1, at: Fixture.later(5_000)) == [.emit(.outcomeFound(p1, r1.paymentID, .success(paid)))])
    }

    /// A payment made under a voucher can be settled by its business until the ledger stops taking the voucher's
    /// settlements, long after the request expired: not known to the ledger before then is not unpaid.
    @Test func aVoucherPaymentTheLedgerDoesNotKnowIsUnpaidOnlyOnceTheVoucherCanNoLongerBeSettled() throws {
        let ledger = SigningKey(), customer = SigningKey()
        let voucher = try PreAuthorizationVoucher(
            voucherID: FixedBytes<Bytes8>(Array(repeating: 9, count: 8)), instrumentID: "card-1",
            customerKey: customer.publicKey, limit: Fixture.money(10_000), issuedAt: Fixture.t0,
            expiresAt: Fixture.later(3_600_000), ledgerKeyID: TrustedLedgerKeys.keyID(of: ledger.publicKey),
            signature: .unsigned
        ).signed(by: ledger)
        let acceptance = try PaymentAcceptance(
            paymentID: r1.paymentID, amount: r1.amount, tipMinorUnits: 0, instrumentID: "card-1", delegatedInstrument: false,
            createdAt: Fixture.later(1_000), requestHash: Fixture.hash, sessionHash: Fixture.hash,
            customerKey: customer.publicKey,
            preAuthorization: try PreAuthorizationPresentation(voucher: voucher, sequence: 1, spentBeforeMinorUnits: 0),
            signature: Fixture.signature)
        var (m, _) = restored([KeptPayment(request: r1, acceptance: acceptance, keptAt: Fixture.later(1_000))])
        #expect(m.ledgerAnswered(r1.paymentID, .notExecuted(PaymentError(.notFound))) == [.lookUpStatus(r1.paymentID)])
        let tolerance = CustomerMachine.clockToleranceMilliseconds
        #expect(m.tick(at: Fixture.later(Fixture.lifetime + tolerance)).isEmpty)
        let settleable = 3_600_000 + CustomerMachine.longestSettlementGraceMilliseconds + tolerance
        #expect(m.tick(at: Fixture.later(settleable - 1)).isEmpty)
        let unpaid = PaymentError(.notFound, "the ledger has no such payment, and it can no longer be made: nothing was charged")
        #expect(m.tick(at: Fixture.later(settleable)) == [.emit(.outcomeFound(.none, r1.paymentID, .failure(unpaid)))])
        #expect(m.snapshot(of: r1.paymentID)?.status == .failed(.notFound))
    }
}
