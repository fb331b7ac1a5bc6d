import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// One payer per payment across settlement items and the online and offline paths, over HTTP on both databases.
@Suite struct PayerConflictTests {
    @Test(arguments: StorageKind.allCases)
    func aPaymentPresentedWithASecondVoucherIsRefusedOnItsOwnAndTheRestOfTheBatchSettles(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let first = try await TestVoucher(ledger, alice, limit: 3_000)
            let second = try await TestVoucher(ledger, alice, limit: 3_000)
            let coffee = try ledger.request(by: cafe, amount: 1_000, online: false)
            let cake = try ledger.request(by: cafe, amount: 500, online: false)

            let results = try await cafe.client.settle(
                [try first.pay(coffee, sequence: 1, spentBefore: 0), try second.pay(coffee, sequence: 1, spentBefore: 0),
                 try first.pay(cake, sequence: 2, spentBefore: 1_000)],
                operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled, .paymentConflict, .settled])
            // Alone in a later batch, the second voucher's item is refused the same way.
            let again = try await cafe.client.settle([try second.pay(coffee, sequence: 1, spentBefore: 0)], operation: "batch-2")
            #expect(again.results.map(\.result) == [.paymentConflict])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_500)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aPaymentPaidOnlineIsNotSettledFromAVoucherAndOneSettledOfflineIsNotPaidOnline(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)

            let online = try ledger.request(by: cafe, amount: 1_000)
            _ = try await cafe.client.createPayment(online)
            #expect(try await bob.client.accept(try ledger.acceptance(of: online, by: bob), request: nil).status == .settled)
            let settled = try await cafe.client.settle([try voucher.pay(online, sequence: 1, spentBefore: 0)], operation: "batch-1")
            #expect(settled.results.map(\.result) == [.paymentConflict])

            let offline = try ledger.request(by: cafe, amount: 700, online: false)
            let results = try await cafe.client.settle([try voucher.pay(offline, sequence: 1, spentBefore: 0)], operation: "batch-2")
            #expect(results.results.map(\.result) == [.settled])
            do {
                _ = try await bob.client.accept(try ledger.acceptance(of: offline, by: bob), request: offline)
                Issue.record("a payment settled offline was paid online again")
            } catch let error as LedgerClientError {
                guard case .refused(409, let detail) = error else { throw error }
                #expect(detail.code == LedgerError.Code.invalidStatus.rawValue)
            }
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_700)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theAuditReportsAPaymentPaidBothOnlineAndOffline(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let request = try ledger.request(by: cafe, amount: 1_000)
            _ = try await bob.client.accept(try ledger.acceptance(of: request, by: bob), request: request)

            // The payer's record vanishes behind the ledger's back, and the voucher pays the same request again.
            try await ledger.storage.storage.write { tx in try tx.run("DELETE FROM payment_payers", []) }
            let results = try await cafe.client.settle([try voucher.pay(request, sequence: 1, spentBefore: 0)], operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled])
            let problems = try await ledger.server.audit()
            #expect(problems.contains { $0.contains("\(request.paymentID)") && $0.contains("both online and offline") })
        }
    }
}
