import BlepayLedger
import BlepayProtocol
import TestSupport
import Testing

@Suite struct PreAuthorizationTests {
    let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    let day: UInt64 = 86_400_000
    let grace: UInt64 = 3_600_000
    let ledgerKey = try! SigningKey(seed: [UInt8](repeating: 1, count: 32))
    let merchantKey = try! SigningKey(seed: [UInt8](repeating: 2, count: 32))
    let deviceKey = try! SigningKey(seed: [UInt8](repeating: 7, count: 32))
    let alice = AccountID("customer:alice"), cafe = AccountID("merchant:cafe"), world = AccountID("external:cards")
    let eur = try! Currency("EUR")
    var ledgerKeys: TrustedLedgerKeys { TrustedLedgerKeys([ledgerKey.publicKey]) }

    func money(_ minor: UInt64) -> Money { try! Money(minorUnits: minor, currency: eur) }

    func issued(id: UInt8 = 1) throws -> (PreAuthorization, Journal) {
        var journal = Journal()
        journal.open(world, kind: .external)
        journal.open(alice, kind: .customer)
        journal.open(cafe, kind: .merchant)
        try journal.transfer(id: "top-up", from: world, to: alice, amount: money(20_000))
        let preAuthorization = try PreAuthorization.issue(
            id: FixedBytes(Array(repeating: id, count: 8)), instrumentID: "card-1", customerKey: deviceKey.publicKey, customer: alice,
            limit: money(5_000), lifetimeMilliseconds: day, graceMilliseconds: grace, at: t0, ledgerKey: ledgerKey,
            journal: &journal)
        return (preAuthorization, journal)
    }

    /// An offline payment as a customer signs it: request by the merchant, acceptance presenting the voucher.
    func offlinePayment(_ n: UInt8, amount: UInt64, sequence: UInt32, voucher: PreAuthorizationVoucher, spentBefore: UInt64 = 0,
        merchantID: String = "m_cafe", at created: Timestamp? = nil, acceptedAt: Timestamp? = nil, signer: SigningKey? = nil)
        -> (PaymentRequest, PaymentAcceptance)
    {
        let created = created ?? t0.adding(milliseconds: 1_000)
        let request = try! PaymentRequest(
            paymentID: PaymentID(bytes: Array(repeating: n, count: 16)), amount: money(amount), reference: nil,
            merchantID: merchantID, merchantName: "Café", createdAt: created, expiresAt: created.adding(milliseconds: 60_000),
            businessOnline: false, signature: Signature64(Array(repeating: 0, count: 64))
        ).signed(by: merchantKey)
        let signer = signer ?? deviceKey
        let acceptance = try! PaymentAcceptance(
            paymentID: request.paymentID, amount: request.amount, tipMinorUnits: 0, instrumentID: "card-1",
            delegatedInstrument: false, createdAt: acceptedAt ?? created, requestHash: request.hash,
            sessionHash: Hash32(Array(repeating: 3, count: 32)), customerKey: signer.publicKey,
            preAuthorization: PreAuthorizationPresentation(voucher: voucher, sequence: sequence, spentBeforeMinorUnits: spentBefore),
            signature: Signature64(Array(repeating: 0, count: 64))
        ).signed(by: signer)
        return (request, acceptance)
    }

    @Test func issuingReservesTheLimitAndSignsTheVoucher() throws {
        let (preAuthorization, journal) = try issued()
        #expect(journal.balance(of: alice, in: "EUR").posted == 15_000)
        #expect(journal.balance(of: preAuthorization.escrow, in: "EUR").posted == 5_000)
        let voucher = preAuthorization.voucher
        #expect(isValidSignature(voucher.signature, of: voucher.signingBytes, by: ledgerKey.publicKey))
        #expect(voucher.expiresAt == t0.adding(milliseconds: day))
        #expect(journal.audit().isEmpty)
    }

    @Test func offlinePaymentsSettleOnceEachWithinTheLimit() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        func settle(_ payment: (PaymentRequest, PaymentAcceptance)) -> PreAuthorization.Settlement {
            preAuthorization.settle(payment.0, payment.1, merchantKey: merchantKey.publicKey, merchant: cafe,
                ledgerKeys: ledgerKeys, journal: &journal)
        }
        let first = offlinePayment(1, amount: 3_000, sequence: 1, voucher: voucher)
        #expect(settle(first) == .settled)
        #expect(settle(first) == .alreadySettled)
        #expect(settle(offlinePayment(2, amount: 2_001, sequence: 2, voucher: voucher, spentBefore: 3_000)) == .voucherExceeded)
        #expect(settle(offlinePayment(3, amount: 100, sequence: 1, voucher: voucher, spentBefore: 3_000)) == .sequenceReused)
        #expect(settle(offlinePayment(4, amount: 2_000, sequence: 2, voucher: voucher, spentBefore: 3_000)) == .settled)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 5_000)
        #expect(journal.balance(of: preAuthorization.escrow, in: "EUR").posted == 0)
        #expect(preAuthorization.spent == 5_000)
        #expect(journal.audit().isEmpty)
    }

    @Test func badSignaturesOtherVouchersAndLatePaymentsAreRefused() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        let stranger = try SigningKey(seed: [UInt8](repeating: 9, count: 32))
        let forged = offlinePayment(1, amount: 100, sequence: 1, voucher: voucher, signer: stranger)
        #expect(preAuthorization.settle(forged.0, forged.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .badSignature)
        let genuine = offlinePayment(2, amount: 100, sequence: 1, voucher: voucher)
        #expect(preAuthorization.settle(genuine.0, genuine.1, merchantKey: stranger.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .badSignature)
        let otherRequest = offlinePayment(3, amount: 100, sequence: 1, voucher: voucher).0
        #expect(preAuthorization.settle(otherRequest, genuine.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .badSignature)
        #expect(preAuthorization.settle(genuine.0, genuine.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: TrustedLedgerKeys([stranger.publicKey]), journal: &journal) == .badSignature)
        let (other, _) = try issued(id: 2)
        let elsewhere = offlinePayment(4, amount: 100, sequence: 1, voucher: other.voucher)
        #expect(preAuthorization.settle(elsewhere.0, elsewhere.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .unknownVoucher)
        let late = offlinePayment(5, amount: 100, sequence: 1, voucher: voucher, at: t0.adding(milliseconds: day))
        #expect(preAuthorization.settle(late.0, late.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .voucherExpired)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 0)
    }

    @Test func validityIsJudgedOnTheMerchantSignedRequestTimeNotTheCustomersClock() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        func settle(_ payment: (PaymentRequest, PaymentAcceptance)) -> PreAuthorization.Settlement {
            preAuthorization.settle(payment.0, payment.1, merchantKey: merchantKey.publicKey, merchant: cafe,
                ledgerKeys: ledgerKeys, journal: &journal)
        }
        let epoch = Timestamp(millisecondsSince1970: 0)
        // Requested after expiry, accepted "in 1970" by the customer's clock.
        #expect(settle(offlinePayment(1, amount: 100, sequence: 1, voucher: voucher, at: voucher.expiresAt, acceptedAt: epoch))
            == .voucherExpired)
        #expect(settle(offlinePayment(2, amount: 100, sequence: 1, voucher: voucher, at: Timestamp(millisecondsSince1970: t0.millisecondsSince1970 - 1),
            acceptedAt: t0.adding(milliseconds: 1_000))) == .voucherNotYetValid)
        // Requested within the window, accepted with a customer clock far ahead: the request's time rules.
        #expect(settle(offlinePayment(3, amount: 100, sequence: 1, voucher: voucher, at: t0.adding(milliseconds: 1_000),
            acceptedAt: voucher.expiresAt.adding(milliseconds: day))) == .settled)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 100)
    }

    @Test func aVoidStopsNewUseAtOnceButTheEscrowPaysWhatWasRequestedBeforeUntilTheRelease() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        func settle(_ payment: (PaymentRequest, PaymentAcceptance)) -> PreAuthorization.Settlement {
            preAuthorization.settle(payment.0, payment.1, merchantKey: merchantKey.publicKey, merchant: cafe,
                ledgerKeys: ledgerKeys, journal: &journal)
        }
        let voidedAt = t0.adding(milliseconds: 10_000)
        try preAuthorization.void(at: voidedAt)
        #expect(preAuthorization.state == .voided && preAuthorization.voidedAt == voidedAt)
        #expect(throws: LedgerError.self) { try preAuthorization.void(at: voidedAt) }
        // Nothing went back: the escrow still pays what the merchant requested before the void.
        #expect(journal.balance(of: alice, in: "EUR").posted == 15_000)
        #expect(settle(offlinePayment(1, amount: 1_200, sequence: 1, voucher: voucher, at: t0.adding(milliseconds: 9_999))) == .settled)
        #expect(settle(offlinePayment(2, amount: 100, sequence: 2, voucher: voucher, at: voidedAt)) == .voucherVoided)
        // Still before the release, a payment requested before the void is brought after the voucher's expiry.
        let justBefore = Timestamp(millisecondsSince1970: preAuthorization.releaseAt.millisecondsSince1970 - 1)
        #expect(try !preAuthorization.release(at: justBefore, journal: &journal))
        #expect(settle(offlinePayment(3, amount: 300, sequence: 3, voucher: voucher, spentBefore: 1_200)) == .settled)

        #expect(preAuthorization.releaseAt == voucher.expiresAt.adding(milliseconds: grace))
        #expect(try preAuthorization.release(at: preAuthorization.releaseAt, journal: &journal))
        #expect(preAuthorization.state == .voided && preAuthorization.releasedAt == preAuthorization.releaseAt)
        #expect(journal.balance(of: alice, in: "EUR").posted == 15_000 + 3_500)
        #expect(journal.balance(of: preAuthorization.escrow, in: "EUR").posted == 0)
        // Released once; after it, nothing settles, not even a payment requested before the void.
        #expect(try !preAuthorization.release(at: preAuthorization.releaseAt.adding(milliseconds: day), journal: &journal))
        #expect(settle(offlinePayment(4, amount: 100, sequence: 4, voucher: voucher, spentBefore: 1_500)) == .voucherVoided)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 1_500)
        #expect(journal.audit().isEmpty)
    }

    @Test func expiryReturnsTheRestOnlyAfterTheGraceAndLatePaymentsSettleMeanwhile() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        let paid = offlinePayment(1, amount: 1_200, sequence: 1, voucher: voucher)
        #expect(try !preAuthorization.release(at: voucher.expiresAt, journal: &journal))
        // Paid offline before expiry, brought online during the grace period: still settles.
        #expect(preAuthorization.settle(paid.0, paid.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .settled)
        #expect(try preAuthorization.release(at: voucher.expiresAt.adding(milliseconds: grace), journal: &journal))
        #expect(preAuthorization.state == .expired)
        #expect(journal.balance(of: alice, in: "EUR").posted == 15_000 + 3_800)
        let late = offlinePayment(2, amount: 100, sequence: 2, voucher: voucher)
        #expect(preAuthorization.settle(late.0, late.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .voucherExpired)
        #expect(throws: LedgerError.self) { try preAuthorization.void(at: voucher.expiresAt.adding(milliseconds: grace)) }
        #expect(journal.audit().isEmpty)
    }

    @Test func anOfflineReceiptIsSignedByTheLedgerForTheEscrowTransfer() throws {
        let (preAuthorization, _) = try issued()
        let paid = offlinePayment(1, amount: 1_200, sequence: 1, voucher: preAuthorization.voucher)
        let settledAt = t0.adding(milliseconds: 5_000)
        let transferID = PreAuthorization.transferID(of: preAuthorization.voucher.voucherID, sequence: 1)
        let receipt = try PreAuthorization.receipt(of: paid.0, paid.1, transferID: transferID, settledAt: settledAt, signedBy: ledgerKey)
        #expect(receipt.status == .settled && receipt.paymentID == paid.0.paymentID && receipt.issuedAt == settledAt)
        #expect(receipt.transactionID == transferID && receipt.amount == money(1_200))
        #expect(isValidSignature(try #require(receipt.ledgerSignature), of: receipt.signingBytes, by: ledgerKey.publicKey))
    }

    @Test func aClaimedRangeMustLieWithinTheLimitAndOverlapNoSettledOne() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        func settle(_ payment: (PaymentRequest, PaymentAcceptance)) -> PreAuthorization.Settlement {
            preAuthorization.settle(payment.0, payment.1, merchantKey: merchantKey.publicKey, merchant: cafe,
                ledgerKeys: ledgerKeys, journal: &journal)
        }
        // Uses 2 and 3 arrive before use 1: honest ranges are disjoint, so the order does not matter.
        #expect(settle(offlinePayment(2, amount: 1_500, sequence: 2, voucher: voucher, spentBefore: 1_000)) == .settled)
        #expect(settle(offlinePayment(3, amount: 2_000, sequence: 3, voucher: voucher, spentBefore: 2_500)) == .settled)
        // Room is left (500 of 5,000), but [4,500, 5,100) is past the limit.
        #expect(settle(offlinePayment(4, amount: 600, sequence: 4, voucher: voucher, spentBefore: 4_500)) == .voucherExceeded)
        // [0, 1,000) is free, but [500, 1,500) overlaps use 2's range: the device signed both.
        let overlapping = offlinePayment(5, amount: 1_000, sequence: 5, voucher: voucher, spentBefore: 500)
        #expect(settle(overlapping) == .rangeOverlap)
        let doubleSpend = try #require(preAuthorization.doubleSpend(of: overlapping.1))
        #expect(doubleSpend.kind == .rangeOverlap && doubleSpend.settled.merchant == "m_cafe")
        #expect(doubleSpend.settled.id == (try PaymentID(bytes: Array(repeating: 2, count: 16))))
        let reused = offlinePayment(6, amount: 100, sequence: 3, voucher: voucher, spentBefore: 4_500)
        #expect(settle(reused) == .sequenceReused)
        #expect(preAuthorization.doubleSpend(of: reused.1)?.settled.id == (try PaymentID(bytes: Array(repeating: 3, count: 16))))
        #expect(settle(offlinePayment(1, amount: 1_000, sequence: 1, voucher: voucher, spentBefore: 0)) == .settled)
        #expect(preAuthorization.doubleSpend(of: offlinePayment(7, amount: 1, sequence: 9, voucher: voucher, spentBefore: 4_999).1) == nil)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 4_500)
        #expect(journal.audit().isEmpty)
    }

    @Test func twoMerchantsPaymentsOfOneIdSettleFromOneVoucherUnderTransfersOfTheirOwn() throws {
        var (preAuthorization, journal) = try issued()
        let voucher = preAuthorization.voucher
        let bakery = AccountID("merchant:bakery")
        journal.open(bakery, kind: .merchant)
        let atCafe = offlinePayment(1, amount: 1_000, sequence: 1, voucher: voucher, merchantID: "m_cafe")
        let atBakery = offlinePayment(1, amount: 700, sequence: 2, voucher: voucher, spentBefore: 1_000, merchantID: "m_bakery")
        #expect(preAuthorization.settle(atCafe.0, atCafe.1, merchantKey: merchantKey.publicKey, merchant: cafe,
            ledgerKeys: ledgerKeys, journal: &journal) == .settled)
        #expect(preAuthorization.settle(atBakery.0, atBakery.1, merchantKey: merchantKey.publicKey, merchant: bakery,
            ledgerKeys: ledgerKeys, journal: &journal) == .settled)
        #expect(preAuthorization.settle(atBakery.0, atBakery.1, merchantKey: merchantKey.publicKey, merchant: bakery,
            ledgerKeys: ledgerKeys, journal: &journal) == .alreadySettled)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 1_000 && journal.balance(of: bakery, in: "EUR").posted == 700)
        let transfers = Set(preAuthorization.uses.values.map(\.transferID))
        #expect(transfers == [PreAuthorization.transferID(of: voucher.voucherID, sequence: 1),
                              PreAuthorization.transferID(of: voucher.voucherID, sequence: 2)])
        #expect(journal.audit().isEmpty)
    }

    /// Random honest customers' uses settle whatever the order and the merchant; a cheating customer's reused
    /// sequences and overlapping ranges never settle twice nor past the limit.
    @Test func honestUsesSettleInAnyOrderAndDoubleSpendsNeverPayTwice() throws {
        var generator = SplitMix64(seed: 0x0FF_11E)
        let merchants = ["m_cafe", "m_bakery", "m_kiosk"]
        for round in 0..<200 {
            var (preAuthorization, journal) = try issued()
            let voucher = preAuthorization.voucher
            let limit = voucher.limit.minorUnits
            var honest: [(PaymentRequest, PaymentAcceptance)] = []
            var spent: UInt64 = 0
            for sequence in 1...UInt32.random(in: 1...12, using: &generator) where spent < limit {
                let amount = UInt64.random(in: 1...min(limit - spent, 1_500), using: &generator)
                honest.append(offlinePayment(UInt8(sequence), amount: amount, sequence: sequence, voucher: voucher,
                    spentBefore: spent, merchantID: merchants.randomElement(using: &generator)!))
                spent += amount
            }
            let cheating = round % 2 == 1
            var items = honest
            if cheating {
                for n in 0..<UInt8.random(in: 1...6, using: &generator) {
                    let sequence = UInt32.random(in: 1...UInt32(honest.count + 2), using: &generator)
                    let start = UInt64.random(in: 0..<limit, using: &generator)
                    items.append(offlinePayment(100 + n, amount: UInt64.random(in: 1...limit, using: &generator), sequence: sequence,
                        voucher: voucher, spentBefore: start, merchantID: merchants.randomElement(using: &generator)!))
                }
            }
            items.shuffle(using: &generator)
            var results: [PaymentID: PreAuthorization.Settlement] = [:]
            for (request, acceptance) in items {
                results[request.paymentID] = preAuthorization.settle(request, acceptance, merchantKey: merchantKey.publicKey,
                    merchant: cafe, ledgerKeys: ledgerKeys, journal: &journal)
            }
            if !cheating {
                #expect(honest.allSatisfy { results[$0.0.paymentID] == .settled }, "round \(round)")
            }
            let settled = preAuthorization.uses.values.sorted { $0.spentBefore < $1.spentBefore }
            #expect(zip(settled, settled.dropFirst()).allSatisfy { $0.range.upperBound <= $1.range.lowerBound }, "round \(round)")
            #expect(Set(settled.map(\.sequence)).count == settled.count, "round \(round)")
            #expect(preAuthorization.spent <= limit && journal.balance(of: cafe, in: "EUR").posted == Int64(preAuthorization.spent))
            #expect(results.values.allSatisfy { [.settled, .sequenceReused, .rangeOverlap, .voucherExceeded].contains($0) })
            #expect(journal.audit().isEmpty, "round \(round)")
        }
    }
}
