import BlepayLedger
import BlepayProtocol
import Testing

@Suite struct LedgerPaymentTests {
    let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    let merchantKey = try! SigningKey(seed: [UInt8](repeating: 2, count: 32))
    let deviceKey = try! SigningKey(seed: [UInt8](repeating: 7, count: 32))
    let alice = AccountID("customer:alice"), cafe = AccountID("merchant:cafe"), world = AccountID("external:cards")
    let eur = try! Currency("EUR")

    var request: PaymentRequest {
        try! PaymentRequest(
            paymentID: PaymentID(bytes: Array(repeating: 9, count: 16)), amount: Money(minorUnits: 2_550, currency: eur),
            reference: nil, merchantID: "m_cafe", merchantName: "Café", createdAt: t0,
            expiresAt: t0.adding(milliseconds: 120_000), businessOnline: true,
            signature: Signature64(Array(repeating: 0, count: 64))
        ).signed(by: merchantKey)
    }

    func acceptance(of request: PaymentRequest, amount: UInt64? = nil, tip: UInt64 = 250, by key: SigningKey? = nil,
        requestHash: Hash32? = nil) -> PaymentAcceptance
    {
        let key = key ?? deviceKey
        return try! PaymentAcceptance(
            paymentID: request.paymentID, amount: Money(minorUnits: amount ?? request.amount.minorUnits, currency: eur),
            tipMinorUnits: tip, instrumentID: "card-1", delegatedInstrument: false, createdAt: t0,
            requestHash: requestHash ?? request.hash, sessionHash: Hash32(Array(repeating: 5, count: 32)),
            customerKey: key.publicKey, preAuthorization: nil, signature: Signature64(Array(repeating: 0, count: 64))
        ).signed(by: key)
    }

    func books(balance: UInt64) -> Journal {
        var journal = Journal()
        journal.open(world, kind: .external)
        journal.open(alice, kind: .customer)
        journal.open(cafe, kind: .merchant)
        try! journal.transfer(id: "top-up", from: world, to: alice, amount: Money(minorUnits: balance, currency: eur))
        return journal
    }

    func code(_ body: () throws -> Void) -> LedgerError.Code? {
        do {
            try body()
            return nil
        } catch { return (error as? LedgerError)?.code }
    }

    @Test func anAcceptedPaymentGoesThroughEveryStatusAndMovesAmountAndTip() throws {
        var journal = books(balance: 10_000)
        var payment = LedgerPayment(request: request, at: t0)
        let accepted = acceptance(of: request)
        try payment.accept(accepted, deviceKey: deviceKey.publicKey, at: t0.adding(milliseconds: 1))
        try payment.accept(accepted, deviceKey: deviceKey.publicKey, at: t0.adding(milliseconds: 2))  // repeated
        try payment.authorize(in: &journal, from: alice, to: cafe, at: t0.adding(milliseconds: 3))
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 10_000, held: 2_800))
        try payment.execute(in: &journal, at: t0.adding(milliseconds: 4))
        #expect(payment.history.map(\.status) == [.authorizationRequired, .authorizing, .authorized, .executed, .settled])
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 7_200, held: 0))
        #expect(journal.balance(of: cafe, in: "EUR").posted == 2_800)
        #expect(journal.audit().isEmpty)
        let ledgerKey = try SigningKey(seed: [UInt8](repeating: 1, count: 32))
        let receipt = try payment.receipt(signedBy: ledgerKey)
        #expect(receipt.status == .settled && receipt.amount == request.amount && receipt.tipMinorUnits == 250)
        #expect(receipt.transactionID == "pay:\(request.paymentID)" && receipt.issuedAt == t0.adding(milliseconds: 4))
        #expect(isValidSignature(receipt.ledgerSignature!, of: receipt.signingBytes, by: ledgerKey.publicKey))
        #expect(code { try payment.execute(in: &journal, at: t0) } == .invalidStatus)
        #expect(code { try payment.cancel(at: t0) } == .invalidStatus)
    }

    @Test func acceptancesAreCheckedAgainstTheDeviceKeyTheRequestAndTheClock() throws {
        var payment = LedgerPayment(request: request, at: t0)
        let key = deviceKey.publicKey
        #expect(code { try payment.accept(acceptance(of: request, amount: 2_549), deviceKey: key, at: t0) } == .amountMismatch)
        let stranger = try SigningKey(seed: [UInt8](repeating: 8, count: 32))
        #expect(code { try payment.accept(acceptance(of: request, by: stranger), deviceKey: key, at: t0) } == .invalidSignature)
        let otherHash = try Hash32(Array(repeating: 1, count: 32))
        #expect(code { try payment.accept(acceptance(of: request, requestHash: otherHash), deviceKey: key, at: t0) }
            == .invalidSignature)
        #expect(code { try payment.accept(acceptance(of: request), deviceKey: key, at: request.expiresAt) } == .expired)
        #expect(payment.status == .authorizationRequired)
        try payment.accept(acceptance(of: request), deviceKey: key, at: t0)
        #expect(code { try payment.accept(acceptance(of: request, tip: 0), deviceKey: key, at: t0) } == .invalidStatus)
    }

    @Test func insufficientFundsFailThePaymentAndHoldNothing() throws {
        var journal = books(balance: 2_799)
        var payment = LedgerPayment(request: request, at: t0)
        try payment.accept(acceptance(of: request), deviceKey: deviceKey.publicKey, at: t0)
        #expect(code { try payment.authorize(in: &journal, from: alice, to: cafe, at: t0) } == .insufficientFunds)
        #expect(payment.status == .failed && payment.failure == .insufficientFunds)
        #expect(code { _ = try payment.receipt(signedBy: deviceKey) } == .invalidStatus)
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 2_799, held: 0))
    }

    @Test func onlyAnUnacceptedRequestIsCancelledOrExpires() throws {
        var cancelled = LedgerPayment(request: request, at: t0)
        try cancelled.cancel(at: t0)
        #expect(cancelled.status == .cancelled)
        #expect(code { try cancelled.accept(acceptance(of: request), deviceKey: deviceKey.publicKey, at: t0) } == .invalidStatus)
        var stale = LedgerPayment(request: request, at: t0)
        let early = stale.expire(at: t0.adding(milliseconds: 119_999))
        let due = stale.expire(at: request.expiresAt)
        #expect(!early && due)
        #expect(stale.status == .failed && stale.failure == .expired)
        var accepted = LedgerPayment(request: request, at: t0)
        try accepted.accept(acceptance(of: request), deviceKey: deviceKey.publicKey, at: t0)
        let acceptedExpired = accepted.expire(at: request.expiresAt)
        #expect(!acceptedExpired && accepted.status == .authorizing)
    }
}
