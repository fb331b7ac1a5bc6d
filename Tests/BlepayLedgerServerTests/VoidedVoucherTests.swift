import BlepayLedger
import BlepayLedgerServer
import BlepayLedgerStore
import BlepayProtocol
import LedgerTestSupport
import Testing

/// A void stops new use of a voucher at once, but its escrow pays what the merchant accepted offline before the void
/// until the release (expiry plus grace), and only then returns the rest; over HTTP on both databases, with the
/// sweep driven at chosen times.
@Suite struct VoidedVoucherTests {
    /// The instrument's posted balance.
    func posted(_ customer: RunningLedger.Party) async throws -> Int64? {
        try await customer.client.instruments().first?.balances.first?.posted
    }

    /// Runs the expiry sweep as the ledger's sweeper would at `now`; how many pre-authorizations it released.
    func sweep(_ ledger: RunningLedger, at now: Timestamp) async throws -> Int {
        let operations = LedgerOperations(ledgerKey: ledger.server.ledgerKey)
        return try await ledger.storage.storage.write { tx in try operations.expire(tx, at: now).preAuthorizations }
    }

    @Test(arguments: StorageKind.allCases)
    func aVoidedVoucherPaysWhatWasRequestedBeforeTheVoidAndReturnsTheRestOnlyAfterExpiryAndGrace(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let issuedAt = voucher.voucher.issuedAt
            let before = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false, createdAt: issuedAt),
                sequence: 1, spentBefore: 0)

            let voided = try await alice.client.voidPreAuthorization(voucher.voucher.voucherID.description)
            #expect(voided.state == .voided)
            #expect(try await posted(alice) == 7_000)
            let after = try voucher.pay(try ledger.request(by: cafe, amount: 500, online: false), sequence: 2, spentBefore: 1_000)
            let results = try await cafe.client.settle([before, after], operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled, .voucherVoided])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.server.audit() == [])

            // Past the voucher's expiry, within the grace: nothing returns yet, and a payment requested before the void
            // still settles when its merchant uploads it.
            let grace = UInt64(LedgerConfiguration().preAuthorizationGraceSeconds) * 1000
            let release = voucher.voucher.expiresAt.adding(milliseconds: grace)
            #expect(try await sweep(ledger, at: voucher.voucher.expiresAt) == 0)
            #expect(try await sweep(ledger, at: Timestamp(millisecondsSince1970: release.millisecondsSince1970 - 1)) == 0)
            #expect(try await posted(alice) == 7_000)
            let late = try voucher.pay(try ledger.request(by: cafe, amount: 700, online: false, createdAt: issuedAt),
                sequence: 3, spentBefore: 1_000)
            #expect(try await cafe.client.settle([late], operation: "batch-2").results.map(\.result) == [.settled])
            #expect(try await ledger.server.audit() == [])

            #expect(try await sweep(ledger, at: release) == 1)
            #expect(try await posted(alice) == 10_000 - 1_700)
            #expect(try await alice.client.preAuthorization(voided.id).state == .voided)
            // Released once; after it nothing settles, not even a payment requested before the void.
            #expect(try await sweep(ledger, at: release.adding(milliseconds: 86_400_000)) == 0)
            let tooLate = try voucher.pay(try ledger.request(by: cafe, amount: 100, online: false, createdAt: issuedAt),
                sequence: 4, spentBefore: 1_700)
            #expect(try await cafe.client.settle([tooLate], operation: "batch-3").results.map(\.result) == [.voucherVoided])
            #expect(try await posted(alice) == 10_000 - 1_700)
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_700)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theAuditReportsAnEscrowReleasedEarlyAndOneThatIsNotItsLimitLessSettledAndReleased(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let id = voucher.voucher.voucherID.description
            let paid = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            #expect(try await cafe.client.settle([paid], operation: "batch-1").results.map(\.result) == [.settled])
            _ = try await alice.client.voidPreAuthorization(id)
            #expect(try await ledger.server.audit() == [])

            // 100 leaves the escrow for the merchant in a balanced transfer no settlement made.
            let escrow = "escrow:\(id)", merchant = "merchant:\(cafe.account.id)"
            func move(_ amount: Int64) async throws {
                try await ledger.storage.storage.write { tx in
                    try tx.run("UPDATE balances SET posted = posted - ? WHERE book = ?", [.integer(amount), .text(escrow)])
                    try tx.run("UPDATE balances SET posted = posted + ? WHERE book = ?", [.integer(amount), .text(merchant)])
                }
            }
            try await move(100)
            try await ledger.storage.storage.write { tx in
                try tx.run("INSERT INTO transfers (id, debit, credit, amount, currency, created_at) VALUES (?, ?, ?, 100, 'EUR', 0)",
                    [.text("taken"), .text(escrow), .text(merchant)])
            }
            #expect(try await ledger.server.audit().contains { $0.contains("pre-authorization \(id): escrow holds 1900") })
            try await move(-100)
            try await ledger.storage.storage.write { tx in try tx.run("DELETE FROM transfers WHERE id = 'taken'", []) }
            #expect(try await ledger.server.audit() == [])

            // The escrow is released while settlements could still arrive.
            let releaseAt = try await ledger.storage.storage.read { tx in
                try tx.row("SELECT release_at FROM pre_authorizations WHERE id = ?", [.text(id)])!.integer(0)
            }
            let early = voucher.voucher.expiresAt
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE pre_authorizations SET release_at = ? WHERE id = ?", [.integer(Int64(early.millisecondsSince1970)), .text(id)])
            }
            let operations = LedgerOperations(ledgerKey: ledger.server.ledgerKey)
            #expect(try await ledger.storage.storage.write { tx in try operations.expire(tx, at: early).preAuthorizations } == 1)
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE pre_authorizations SET release_at = ? WHERE id = ?", [.integer(releaseAt), .text(id)])
            }
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 9_000)
            let problems = try await ledger.server.audit()
            #expect(problems.count == 1 && problems.contains { $0.contains(id) && $0.contains("while settlements could arrive") })
        }
    }
}
