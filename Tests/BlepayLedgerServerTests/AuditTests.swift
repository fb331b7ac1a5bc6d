import BlepayLedger
import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Testing

/// The audit finds books that were changed behind the ledger's back.
@Suite struct AuditTests {
    @Test(arguments: StorageKind.allCases)
    func theAuditReportsAnUnbalancedBalanceAndAPaymentWithoutItsPostings(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 1_000)
            _ = try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: request)
            #expect(try await ledger.server.audit() == [])

            // Money appears in the merchant's book without a transfer.
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE balances SET posted = posted + 1 WHERE book = ?", [.text("merchant:\(cafe.account.id)")])
            }
            let problems = try await ledger.server.audit()
            #expect(!problems.isEmpty)
            #expect(problems.contains { $0.contains("merchant:\(cafe.account.id)") })

            // A settled payment whose transfer vanished.
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE balances SET posted = posted - 1 WHERE book = ?", [.text("merchant:\(cafe.account.id)")])
                try tx.run("DELETE FROM transfers WHERE id = (SELECT transfer FROM payments WHERE id = ?)",
                    [.text(request.paymentID.description)])
            }
            #expect(try await ledger.server.audit().contains { $0.contains(request.paymentID.description) })
        }
    }

    @Test func theAuditReportsARefundWithoutItsTransferAndRefundsPastThePayment() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 1_000)
            _ = try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: request)
            let refund = try await cafe.client.refund(request.paymentID, CreateRefund(amount: 600, reason: nil), idempotencyKey: "r")
            #expect(try await ledger.server.audit() == [])

            // The row says more went back than its transfer moved, and more than the payment paid.
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE refunds SET amount = 1200 WHERE id = ?", [.text(refund.id)])
            }
            let problems = try await ledger.server.audit()
            #expect(problems.contains { $0.contains("refund \(refund.id)") && $0.contains("transfer") })
            #expect(problems.contains { $0.contains(request.paymentID.description) && $0.contains("1200 refunded") })
        }
    }
}
