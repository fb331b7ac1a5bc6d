import BlepayLedger
import BlepayProtocol
import Testing

@Suite struct LedgerPaymentTests {
    let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    let merchantKey = try! SigningKey(seed: [UInt8](repeating: 2, count: 32))
    let deviceKey = try! SigningKey(seed: [UInt8](repeating: 7, count: 32))
    let alice = AccountID("customer:alice"), bob = AccountID("customer:bob"), carol = AccountID("customer:carol")
    let cafe = AccountID("merchant:cafe"), world = AccountID("external:cards")
    let eur = try! Currency("EUR")

    var request: PaymentRequest { request(merchantID: "m_cafe") }

    func request(merchantID: String) -> PaymentRequest {
        try! PaymentRequest(
            paymentID: PaymentID(bytes: Array(repeating: 9, count: 16)), amount: Money(minorUnits: 2_550, currency: eur),
            reference: nil, merchantID: merchantID, merchantName: "Café", createdAt: t0,
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

    /// Alice's book holds `balance`; Bob's and Carol's hold `others`.
    func books(balance: UInt64, others: UInt64 = 0) -> Journal {
        var journal = Journal()
        journal.open(world, kind: .external)
        journal.open(cafe, kind: .merchant)
        for (customer, amount) in [(alice, balance), (bob, others), (carol, others)] {
            journal.open(customer, kind: .customer)
            if amount > 0 {
                try! journal.transfer(id: "top-up-\(customer)", from: world, to: customer, amount: Money(minorUnits: amount, currency: eur))
            }
        }
        return journal
    }

    /// Accepts for Alice's book (unless `from` says otherwise) with her device key.
    func accept(_ payment: inout LedgerPayment, _ accepted: PaymentAcceptance, key: Key32? = nil, from book: AccountID? = nil,
        blocked: Bool = false, in journal: inout Journal, at now: Timestamp? = nil) throws(LedgerError)
    {
        try payment.accept(accepted, deviceKey: key ?? deviceKey.publicKey, from: book ?? alice, blocked: blocked, to: cafe,
            in: &journal, at: now ?? t0)
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
        try accept(&payment, accepted, in: &journal, at: t0.adding(milliseconds: 1))
        try accept(&payment, accepted, in: &journal, at: t0.adding(milliseconds: 2))  // repeated
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 10_000, held: 2_800))
        try payment.execute(in: &journal, at: t0.adding(milliseconds: 4))
        #expect(payment.history.map(\.status) == [.authorizationRequired, .authorizing, .authorized, .executed, .settled])
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 7_200, held: 0))
        #expect(journal.balance(of: cafe, in: "EUR").posted == 2_800)
        #expect(journal.audit().isEmpty)
        let ledgerKey = try SigningKey(seed: [UInt8](repeating: 1, count: 32))
        let receipt = try payment.receipt(signedBy: ledgerKey)
        #expect(receipt.status == .settled && receipt.amount == request.amount && receipt.tipMinorUnits == 250)
        #expect(receipt.transactionID == "pay:\(request.merchantID):\(request.paymentID)")
        #expect(receipt.issuedAt == t0.adding(milliseconds: 4))
        #expect(isValidSignature(receipt.ledgerSignature!, of: receipt.signingBytes, by: ledgerKey.publicKey))
        #expect(code { try payment.execute(in: &journal, at: t0) } == .invalidStatus)
        #expect(code { try payment.cancel(at: t0) } == .invalidStatus)
    }

    /// The receipt's transaction id is the transfer's name, at most 64 characters whatever the merchant id: a name
    /// that would not fit is named by the merchant id's digest, distinct for each merchant, and still by the payment id.
    @Test func everyMerchantIdGetsNamesThatFitItsReceipt() throws {
        let ledgerKey = try SigningKey(seed: [UInt8](repeating: 1, count: 32))
        let longest = String(repeating: "m", count: 63)
        var names: Set<String> = []
        for merchantID in [longest + "1", longest + "2", String(repeating: "m", count: 27)] {
            var journal = books(balance: 10_000)
            let request = request(merchantID: merchantID)
            var payment = LedgerPayment(request: request, at: t0)
            try accept(&payment, acceptance(of: request), in: &journal)
            try payment.execute(in: &journal, at: t0.adding(milliseconds: 1))
            let receipt = try payment.receipt(signedBy: ledgerKey)
            #expect(receipt.transactionID == payment.transferID && receipt.merchantID == merchantID)
            #expect([payment.holdID, payment.transferID].allSatisfy { name in
                name.utf8.count <= 64 && name.contains(request.paymentID.description)
            })
            names.formUnion([payment.holdID, payment.transferID])
        }
        #expect(names.count == 6)
        // Exactly 64 characters still fit: only the hold's name, one longer, is named by the digest.
        #expect(names.contains("pay:\(String(repeating: "m", count: 27)):\(request.paymentID)"))
        #expect(!names.contains { $0.hasPrefix("hold:\(String(repeating: "m", count: 27))") })
    }

    @Test func acceptancesAreCheckedAgainstTheDeviceKeyTheRequestAndTheClock() throws {
        var journal = books(balance: 10_000)
        var payment = LedgerPayment(request: request, at: t0)
        #expect(code { try accept(&payment, acceptance(of: request, amount: 2_549), in: &journal) } == .amountMismatch)
        let stranger = try SigningKey(seed: [UInt8](repeating: 8, count: 32))
        #expect(code { try accept(&payment, acceptance(of: request, by: stranger), in: &journal) } == .invalidSignature)
        let otherHash = try Hash32(Array(repeating: 1, count: 32))
        #expect(code { try accept(&payment, acceptance(of: request, requestHash: otherHash), in: &journal) } == .invalidSignature)
        #expect(code { try accept(&payment, acceptance(of: request), in: &journal, at: request.expiresAt) } == .expired)
        #expect(payment.status == .authorizationRequired)
        try accept(&payment, acceptance(of: request), in: &journal)
        #expect(code { try accept(&payment, acceptance(of: request, tip: 0), in: &journal) } == .invalidStatus)
    }

    /// One request went to several customers: Alice's card is short of funds and Bob's is blocked; both are refused
    /// without ending it or holding anything, and Carol, who can pay, pays.
    @Test func aPayersRefusalLeavesThePaymentOpenAndHoldsNothingForTheNextCustomer() throws {
        var journal = books(balance: 2_799, others: 10_000)
        let (balances, changes) = (journal.allBalances, journal.changes)
        var payment = LedgerPayment(request: request, at: t0)
        let open = payment
        #expect(code { try accept(&payment, acceptance(of: request), in: &journal) } == .insufficientFunds)
        #expect(payment == open && payment.status == .authorizationRequired && payment.failure == nil)
        let bobKey = try SigningKey(seed: [UInt8](repeating: 3, count: 32))
        #expect(code {
            try accept(&payment, acceptance(of: request, by: bobKey), key: bobKey.publicKey, from: bob, blocked: true, in: &journal)
        } == .blocked)
        #expect(payment == open)
        #expect(journal.allBalances == balances && journal.changes == changes && journal.holds.isEmpty)

        let carolKey = try SigningKey(seed: [UInt8](repeating: 4, count: 32))
        let paid = acceptance(of: request, by: carolKey)
        try accept(&payment, paid, key: carolKey.publicKey, from: carol, in: &journal, at: t0.adding(milliseconds: 1))
        try payment.execute(in: &journal, at: t0.adding(milliseconds: 1))
        #expect(payment.status == .settled && payment.acceptance == paid)
        #expect(payment.history.map(\.status) == [.authorizationRequired, .authorizing, .authorized, .executed, .settled])
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 2_799, held: 0))
        #expect(journal.balance(of: bob, in: "EUR") == .init(posted: 10_000, held: 0))
        #expect(journal.balance(of: carol, in: "EUR") == .init(posted: 10_000 - 2_800, held: 0))
        #expect(journal.audit().isEmpty)
    }

    @Test func onlyAnUnacceptedRequestIsCancelledOrExpires() throws {
        var cancelled = LedgerPayment(request: request, at: t0)
        try cancelled.cancel(at: t0)
        #expect(cancelled.status == .cancelled)
        var journal = books(balance: 10_000)
        #expect(code { try accept(&cancelled, acceptance(of: request), in: &journal) } == .invalidStatus)
        var stale = LedgerPayment(request: request, at: t0)
        let early = stale.expire(at: t0.adding(milliseconds: 119_999))
        let due = stale.expire(at: request.expiresAt)
        #expect(!early && due)
        #expect(stale.status == .failed && stale.failure == .expired)
        var accepted = LedgerPayment(request: request, at: t0)
        try accept(&accepted, acceptance(of: request), in: &journal)
        let acceptedExpired = accepted.expire(at: request.expiresAt)
        #expect(!acceptedExpired && accepted.status == .authorized)
    }
}
