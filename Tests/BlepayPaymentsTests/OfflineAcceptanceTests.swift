import BlepayPayments
import BlepayProtocol
import Testing

/// Event scripts for a business that cannot reach the ledger: an acceptance under a voucher the ledger signed is
/// checked offline and kept, not executed; the winner gets a pending receipt and the others `otherPaid`. Every
/// way a presentation can be wrong is the payer's refusal, and the request stays open for the others.
@Suite struct OfflineAcceptanceTests {
    let p1 = PeerID(1), p2 = PeerID(2)
    let ledgerKey = SigningKey()
    let customer = SigningKey()
    /// The request, signed while the business was offline, five minutes into the voucher's life.
    let r: PaymentRequest
    var id: PaymentID { r.paymentID }

    init() {
        r = try! PaymentRequest(
            paymentID: Fixture.id(1), amount: Fixture.money(2550), reference: "order-1", merchantID: "m_cafe.42",
            merchantName: "Café", createdAt: Fixture.later(300_000), expiresAt: Fixture.later(420_000),
            businessOnline: false, signature: Fixture.signature)
    }

    func policy(maximum: UInt64 = 5_000, trusting keys: [Key32]? = nil) -> OfflinePolicy {
        OfflinePolicy(trusted: TrustedLedgerKeys(keys ?? [ledgerKey.publicKey]), currency: Fixture.eur, maximumPaymentMinorUnits: maximum)
    }

    /// The ledger's deny list as the business fetched it a minute before the request.
    func denyList(
        vouchers: [FixedBytes<Bytes8>] = [], keys: [Key32] = [], issuedAt: Timestamp = Fixture.later(240_000),
        signer: SigningKey? = nil
    ) -> DenyList {
        try! DenyList(
            issuedAt: issuedAt, voidedVouchers: vouchers, blockedKeys: keys,
            ledgerKeyID: TrustedLedgerKeys.keyID(of: (signer ?? ledgerKey).publicKey), signature: .unsigned
        ).signed(by: signer ?? ledgerKey)
    }

    func open(_ policy: OfflinePolicy?, request: PaymentRequest? = nil, denyList: DenyList?? = nil) throws -> BusinessMachine {
        var m = BusinessMachine(verifier: Verifier(), offline: policy)
        if let list = denyList ?? self.denyList() { m.denyListReceived(list) }
        for peer in [p1, p2] { _ = m.connected(peer, Fixture.session, at: Fixture.later(300_000)) }
        _ = try m.request(request ?? r, at: Fixture.later(300_000))
        return m
    }

    func voucher(
        limit: UInt64 = 10_000, currency: Currency = Fixture.eur, key: Key32? = nil, instrument: String = "card-1",
        issuedAt: Timestamp = Fixture.t0, lifetime: UInt64 = 3_600_000, signer: SigningKey? = nil
    ) -> PreAuthorizationVoucher {
        try! PreAuthorizationVoucher(
            voucherID: FixedBytes<Bytes8>(Array(repeating: 9, count: 8)), instrumentID: instrument,
            customerKey: key ?? customer.publicKey, limit: Fixture.money(limit, currency), issuedAt: issuedAt,
            expiresAt: issuedAt.adding(milliseconds: lifetime), ledgerKeyID: TrustedLedgerKeys.keyID(of: (signer ?? ledgerKey).publicKey),
            signature: .unsigned
        ).signed(by: signer ?? ledgerKey)
    }

    func acceptance(
        of request: PaymentRequest? = nil, tip: UInt64 = 100, voucher: PreAuthorizationVoucher? = nil, spentBefore: UInt64 = 0
    ) -> PaymentAcceptance {
        let request = request ?? r
        let presentation = try! PreAuthorizationPresentation(
            voucher: voucher ?? self.voucher(), sequence: 1, spentBeforeMinorUnits: spentBefore)
        return try! PaymentAcceptance(
            paymentID: request.paymentID, amount: request.amount, tipMinorUnits: tip, instrumentID: "card-1",
            delegatedInstrument: false, createdAt: Fixture.later(301_000), requestHash: Fixture.hash,
            sessionHash: Fixture.hash, customerKey: customer.publicKey, preAuthorization: presentation,
            signature: Fixture.signature)
    }

    @Test func aValidPresentationIsKeptAndTheWinnerHearsItPending() throws {
        var m = try open(policy())
        let a1 = acceptance()
        #expect(m.receive(.paymentAcceptance(a1), from: p1, at: Fixture.later(301_000))
            == [.emit(.accepted(id, by: p1, total: Fixture.money(2650))), .queue(r, a1)])
        // Kept on disk: answered as an execution is, with a receipt pending settlement.
        let pending = try Receipt.pending(r, a1, at: Fixture.later(301_500), signedBy: Fixture.merchantKey)
        #expect(m.ledgerAnswered(id, .executed(pending), at: Fixture.later(301_500)) == [
            .send(p1, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(pending)))),
            .send(p2, .otherPaid(OtherPaid(paymentID: id))), .emit(.finished(id, by: p1, pending)),
        ])
        #expect(m.snapshot(of: id)?.receipt?.status == .pendingSettlement)
    }

    @Test func afterARestartTheWinnerWhoLostTheResultGetsItFromWhatWasKept() throws {
        let a1 = acceptance()
        let query = ResultQuery(paymentID: id, acceptanceHash: a1.hash)
        // A business that restarted: it holds no payment in memory, and the customer asks over a new link.
        var m = BusinessMachine(verifier: Verifier(), offline: policy())
        _ = m.connected(p1, Fixture.session, at: Fixture.later(330_000))
        _ = m.connected(p2, Fixture.session, at: Fixture.later(330_000))
        #expect(m.receive(.resultQuery(query), from: p1, at: Fixture.later(330_000)) == [.recall(query, from: p1)])
        let kept = KeptPayment(request: r, acceptance: a1, keptAt: Fixture.later(301_500))
        let pending = try Receipt.pending(r, a1, at: kept.keptAt, signedBy: Fixture.merchantKey)
        #expect(m.recalled(kept, acknowledgement: pending, for: query, from: p1)
            == [.send(p1, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(pending))))])
        // Only the holder of that acceptance is answered, only over a live link, only with a pending receipt.
        let guess = ResultQuery(paymentID: id, acceptanceHash: Fixture.hash)
        #expect(m.recalled(kept, acknowledgement: pending, for: guess, from: p2).isEmpty)
        #expect(m.recalled(kept, acknowledgement: Fixture.receipt(for: a1), for: query, from: p1).isEmpty)
        _ = m.disconnected(p1)
        #expect(m.recalled(kept, acknowledgement: pending, for: query, from: p1).isEmpty)
        // A business that takes nothing offline kept nothing: there is nothing to read back.
        var online = BusinessMachine(verifier: Verifier())
        _ = online.connected(p1, Fixture.session, at: Fixture.later(330_000))
        #expect(online.receive(.resultQuery(query), from: p1, at: Fixture.later(330_000)).isEmpty)
    }

    @Test func aPaymentTheQueueRefusesStaysOpenForTheOthers() throws {
        var m = try open(policy())
        _ = m.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(301_000))
        let refused = m.ledgerAnswered(id, .notExecuted(PaymentError(.limitExceeded, "100 payments wait")), at: Fixture.later(301_500))
        #expect(refused.events == [.acceptanceRefused(id, by: p1, PaymentError(.limitExceeded, "100 payments wait"))])
        let a2 = acceptance(tip: 0)
        #expect(m.receive(.paymentAcceptance(a2), from: p2, at: Fixture.later(302_000)).contains(.queue(r, a2)))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let code: PaymentErrorCode
        let make: @Sendable (OfflineAcceptanceTests) -> PaymentAcceptance
        var testDescription: String { name }
    }

    static let refusals: [Case] = [
        // A plain acceptance says the customer executes; without a ledger key to check its receipt, nobody can.
        Case(name: "no presentation, no ledger key for a receipt", code: .ledgerOffline) { Fixture.acceptance(of: $0.r) },
        Case(name: "over the merchant's cap", code: .limitExceeded) { $0.acceptance(tip: 2_500) },
        Case(name: "signed by an unknown ledger key", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(signer: SigningKey()))
        },
        Case(name: "issued to another key", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(key: SigningKey().publicKey))
        },
        Case(name: "for another instrument", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(instrument: "card-2"))
        },
        Case(name: "in another currency", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(currency: Fixture.usd))
        },
        Case(name: "expired before the request", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(lifetime: 200_000))
        },
        Case(name: "issued after the request", code: .preAuthorizationInvalid) {
            $0.acceptance(voucher: $0.voucher(issuedAt: Fixture.later(350_000)))
        },
        Case(name: "less left than the total", code: .preAuthorizationInvalid) { $0.acceptance(spentBefore: 7_400) },
    ]

    @Test(arguments: refusals)
    func aPresentationThatDoesNotHoldIsRefusedAndTheRequestStaysOpen(_ refusal: Case) throws {
        var m = try open(policy())
        let bad = refusal.make(self)
        let answer = m.receive(.paymentAcceptance(bad), from: p1, at: Fixture.later(301_000))
        let codes = answer.events.map { event -> PaymentErrorCode? in
            if case .acceptanceRefused(_, _, let error) = event { error.code } else { nil }
        }
        #expect(codes == [refusal.code])
        #expect(!answer.contains { if case .queue = $0 { true } else { false } })
        let good = acceptance()
        #expect(m.receive(.paymentAcceptance(good), from: p2, at: Fixture.later(301_000)).contains(.queue(r, good)))
    }

    @Test func onlineRequestsAreNeverQueuedAndABusinessWithoutPolicyTakesNothingOffline() throws {
        let online = Fixture.request(2, at: Fixture.later(300_000))
        var m = try open(policy(), request: online)
        let presented = acceptance(of: online)
        let answer = m.receive(.paymentAcceptance(presented), from: p1, at: Fixture.later(301_000))
        #expect(answer.events == [.acceptanceRefused(online.paymentID, by: p1, PaymentError(
            .preAuthorizationInvalid, "an online request is paid online"))])
        #expect(m.receive(.paymentAcceptance(Fixture.acceptance(of: online)), from: p2, at: Fixture.later(301_000))
            .executions.count == 1)

        var closed = try open(nil)
        #expect(closed.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(301_000)).events
            == [.acceptanceRefused(id, by: p1, PaymentError(.ledgerOffline, "this business takes no offline payments"))])
    }

    struct DenyCase: Sendable, CustomTestStringConvertible {
        let name: String
        let code: PaymentErrorCode
        let list: @Sendable (OfflineAcceptanceTests) -> DenyList?
        var testDescription: String { name }
    }

    static let denials: [DenyCase] = [
        DenyCase(name: "no deny list", code: .ledgerOffline) { _ in nil },
        DenyCase(name: "a deny list older than the maximum", code: .ledgerOffline) {
            // A day and the clock tolerance before the acceptance, and then some.
            $0.denyList(issuedAt: Timestamp(millisecondsSince1970: Fixture.t0.millisecondsSince1970 - 86_400_000))
        },
        DenyCase(name: "a deny list by an untrusted key", code: .ledgerOffline) { $0.denyList(signer: SigningKey()) },
        DenyCase(name: "the voucher voided", code: .preAuthorizationInvalid) { $0.denyList(vouchers: [$0.voucher().voucherID]) },
        DenyCase(name: "the device blocked", code: .blocked) { $0.denyList(keys: [$0.customer.publicKey]) },
    ]

    /// The deny list a business holds must be the ledger's, recent, and name neither the voucher nor the device.
    @Test(arguments: denials)
    func aVoucherTheDenyListDoesNotClearIsRefused(_ denial: DenyCase) throws {
        var m = try open(policy(), denyList: .some(denial.list(self)))
        let answer = m.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(301_000))
        #expect(answer.events.map { event -> PaymentErrorCode? in
            if case .acceptanceRefused(_, _, let error) = event { error.code } else { nil }
        } == [denial.code])
        // A newer list that clears it lets the next customer's voucher through.
        m.denyListReceived(denyList(issuedAt: Fixture.later(300_500)))
        let good = acceptance()
        #expect(m.receive(.paymentAcceptance(good), from: p2, at: Fixture.later(301_000)).contains(.queue(r, good)))
    }

    @Test func anOlderDenyListNeverReplacesANewerOne() throws {
        var m = try open(policy(), denyList: .some(denyList(keys: [customer.publicKey], issuedAt: Fixture.later(299_000))))
        m.denyListReceived(denyList(issuedAt: Fixture.later(200_000)))
        #expect(m.receive(.paymentAcceptance(acceptance()), from: p1, at: Fixture.later(301_000)).events.map {
            event -> PaymentErrorCode? in if case .acceptanceRefused(_, _, let error) = event { error.code } else { nil }
        } == [.blocked])
    }
}
