import BlepayLedger
import BlepayProtocol
import TestSupport
import Testing

@Suite struct JournalTests {
    let world = AccountID("external:cards"), alice = AccountID("customer:alice"), cafe = AccountID("merchant:cafe")
    let eur = try! Currency("EUR")
    func eur(_ minor: UInt64) -> Money { try! Money(minorUnits: minor, currency: eur) }
    let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    func books() throws -> Journal {
        var journal = Journal()
        journal.open(world, kind: .external)
        journal.open(alice, kind: .customer)
        journal.open(cafe, kind: .merchant)
        try journal.transfer(id: "top-up", from: world, to: alice, amount: eur(10_000))
        return journal
    }

    func code(_ body: () throws -> Void) -> LedgerError.Code? {
        do {
            try body()
            return nil
        } catch { return (error as? LedgerError)?.code }
    }

    @Test func transfersBalanceAndNeverOverdraw() throws {
        var journal = try books()
        try journal.transfer(id: "pay-1", from: alice, to: cafe, amount: eur(2_550))
        #expect(journal.balance(of: alice, in: "EUR").posted == 7_450)
        #expect(journal.balance(of: cafe, in: "EUR").posted == 2_550)
        #expect(journal.balance(of: world, in: "EUR").posted == -10_000)
        #expect(code { try journal.transfer(id: "pay-2", from: alice, to: cafe, amount: eur(7_451)) } == .insufficientFunds)
        #expect(code { try journal.transfer(id: "pay-3", from: alice, to: AccountID("nobody"), amount: eur(1)) } == .unknownAccount)
        #expect(journal.audit().isEmpty)
    }

    @Test func idsMakeTransfersIdempotent() throws {
        var journal = try books()
        let first = try journal.transfer(id: "pay-1", from: alice, to: cafe, amount: eur(100))
        #expect(try journal.transfer(id: "pay-1", from: alice, to: cafe, amount: eur(100)) == first)
        #expect(journal.balance(of: alice, in: "EUR").posted == 9_900)
        #expect(code { try journal.transfer(id: "pay-1", from: alice, to: cafe, amount: eur(101)) } == .idConflict)
    }

    @Test func holdsReserveThenPostPartlyVoidOrExpire() throws {
        var journal = try books()
        try journal.hold(id: "h1", from: alice, to: cafe, amount: eur(6_000), expiresAt: t0.adding(milliseconds: 1_000))
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 10_000, held: 6_000))
        #expect(code { try journal.transfer(id: "x", from: alice, to: cafe, amount: eur(4_001)) } == .insufficientFunds)
        #expect(code { try journal.post(hold: "h1", amount: 6_001, transferID: "t1", at: t0) } == .exceedsHold)
        let posted = try journal.post(hold: "h1", amount: 2_500, transferID: "t1", at: t0)
        #expect(posted.amount == 2_500)
        #expect(try journal.post(hold: "h1", amount: 2_500, transferID: "t1", at: t0) == posted)  // repeated
        #expect(journal.balance(of: alice, in: "EUR") == .init(posted: 7_500, held: 0))
        #expect(code { try journal.void(hold: "h1") } == .holdNotPending)

        try journal.hold(id: "h2", from: alice, to: cafe, amount: eur(1_000), expiresAt: t0.adding(milliseconds: 1_000))
        try journal.void(hold: "h2")
        try journal.void(hold: "h2")
        #expect(code { try journal.post(hold: "h2", amount: 1, transferID: "t2", at: t0) } == .holdNotPending)

        try journal.hold(id: "h3", from: alice, to: cafe, amount: eur(1_000), expiresAt: t0.adding(milliseconds: 1_000))
        #expect(journal.expireHolds(at: t0.adding(milliseconds: 999)).isEmpty)
        #expect(journal.expireHolds(at: t0.adding(milliseconds: 1_000)) == ["h3"])
        #expect(code { try journal.post(hold: "h3", amount: 1, transferID: "t3", at: t0) } == .holdNotPending)
        try journal.hold(id: "h4", from: alice, to: cafe, amount: eur(1_000), expiresAt: t0.adding(milliseconds: 1_000))
        #expect(code { try journal.post(hold: "h4", amount: 1, transferID: "t4", at: t0.adding(milliseconds: 1_000)) }
            == .holdNotPending)
        #expect(journal.balance(of: alice, in: "EUR").available == 7_500)
        #expect(journal.audit().isEmpty)
    }

    @Test func balancesStopAtTheLargestTheBooksCanCount() throws {
        var journal = try books()
        var deposits = 0
        var refusal: LedgerError.Code?
        while refusal == nil, deposits < 10_000 {
            refusal = code { try journal.transfer(id: "d\(deposits)", from: world, to: alice, amount: eur(Money.maximumMinorUnits)) }
            if refusal == nil { deposits += 1 }
        }
        #expect(refusal == .balanceLimit)
        #expect(deposits == Int((Int64.max - 10_000) / Int64(Money.maximumMinorUnits)))
        #expect(journal.balance(of: alice, in: "EUR").posted == 10_000 + Int64(deposits) * Int64(Money.maximumMinorUnits))
        #expect(journal.audit().isEmpty)
    }

    @Test func randomOperationsKeepTheBooksSound() throws {
        let accounts = [world] + (0..<5).map { AccountID("customer:\($0)") } + [cafe]
        for seed in 0..<200 as Range<UInt64> {
            var random = SplitMix64(seed: seed)
            var journal = Journal()
            journal.open(world, kind: .external)
            for account in accounts.dropFirst() { journal.open(account, kind: account == cafe ? .merchant : .customer) }
            for step in 0..<200 {
                let from = accounts.randomElement(using: &random)!, to = accounts.randomElement(using: &random)!
                let amount = eur(UInt64.random(in: 1...5_000, using: &random))
                let now = t0.adding(milliseconds: UInt64(step) * 100)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: _ = try? journal.transfer(id: "t\(step)", from: from, to: to, amount: amount)
                case 1: _ = try? journal.hold(id: "h\(step)", from: from, to: to, amount: amount, expiresAt: now.adding(milliseconds: 2_000))
                case 2:
                    if let hold = journal.holds.keys.randomElement(using: &random) {
                        _ = try? journal.post(hold: hold, amount: UInt64.random(in: 1...5_000, using: &random), transferID: "p\(step)", at: now)
                    }
                default: _ = journal.expireHolds(at: now)
                }
            }
            #expect(journal.audit().isEmpty, "seed \(seed)")
        }
    }
}
