import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import LedgerTestSupport
import Testing

/// A request the business cancels before the ledger saw it is recorded, and neither path can pay it, over HTTP.
@Suite struct CancelledRequestTests {
    @Test(arguments: StorageKind.allCases)
    func aRequestCancelledWithItsRequestIsPaidNeitherOfflineNorOnline(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let request = try ledger.request(by: cafe, amount: 500, online: false)
            #expect(try await cafe.client.cancelPayment(request.paymentID, request: request).status == .cancelled)

            let results = try await alice.client.settle([try voucher.pay(request, sequence: 1, spentBefore: 0)], operation: "batch-1")
            #expect(results.results.map(\.result) == [.requestCancelled])
            do {
                _ = try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: request)
                Issue.record("a cancelled request was paid online")
            } catch let error as LedgerClientError {
                guard case .refused(409, let detail) = error else { throw error }
                #expect(detail.code == LedgerError.Code.invalidStatus.rawValue)
            }
            // Only its merchant can cancel a request, and only one it signed.
            let other = try await ledger.merchant("Bakery")
            let theirs = try ledger.request(by: cafe, amount: 100, online: false)
            await #expect(throws: LedgerClientError.self) { try await other.client.cancelPayment(theirs.paymentID, request: theirs) }
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted ?? 0 == 0)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
