import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import LedgerTestSupport
import Testing

/// An offline payment's time is the merchant-signed request's, judged against the voucher's validity, over HTTP.
@Suite struct VoucherValidityTests {
    @Test(arguments: StorageKind.allCases)
    func aRequestSignedBeforeTheVoucherWasIssuedIsRefusedWhateverTheCustomersClockSays(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let early = try ledger.request(by: cafe, amount: 500, online: false,
                createdAt: Timestamp(millisecondsSince1970: voucher.voucher.issuedAt.millisecondsSince1970 - 60_000))
            let honest = try ledger.request(by: cafe, amount: 700, online: false)
            let results = try await cafe.client.settle(
                [try voucher.pay(early, sequence: 1, spentBefore: 0), try voucher.pay(honest, sequence: 2, spentBefore: 0)],
                operation: "batch-1")
            #expect(results.results.map(\.result) == [.voucherNotYetValid, .settled])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 700)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
