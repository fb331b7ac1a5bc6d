import BlepayLedger
import BlepayLedgerServer
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// A payment id is its merchant's: two merchants' payments of one id are two payments, whichever path pays each.
@Suite struct MerchantPaymentIDTests {
    func request(by merchant: RunningLedger.Party, id: PaymentID, amount: UInt64, online: Bool) throws -> PaymentRequest {
        let now = LedgerServer.systemClock()
        return try PaymentRequest(
            paymentID: id, amount: Money(minorUnits: amount, currency: Currency("EUR")), reference: nil,
            merchantID: merchant.account.id, merchantName: merchant.account.name, createdAt: now,
            expiresAt: now.adding(milliseconds: 120_000), businessOnline: online, signature: .unsigned
        ).signed(by: merchant.key)
    }

    @Test(arguments: StorageKind.allCases)
    func twoMerchantsPaymentsOfOneIdBothSettleOfflineAndOnline(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000, operation: "voucher-1")
            let id = try PaymentID(bytes: Array(repeating: 0x42, count: 16))

            // Both offline, from one voucher.
            let atCafe = try voucher.pay(try request(by: cafe, id: id, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let atBakery = try voucher.pay(try request(by: bakery, id: id, amount: 700, online: false), sequence: 2, spentBefore: 1_000)
            let cafeResults = try await cafe.client.settle([atCafe], operation: "batch-1")
            let bakeryResults = try await bakery.client.settle([atBakery], operation: "batch-1")
            #expect(cafeResults.results.map(\.result) == [.settled] && bakeryResults.results.map(\.result) == [.settled])
            #expect(try await bakery.client.settle([atBakery], operation: "batch-2").results.map(\.result) == [.alreadySettled])
            // Each merchant reads its own payment and receipt, named by its own transfer.
            let cafePayment = try await cafe.client.payment(id)
            let bakeryPayment = try await bakery.client.payment(id)
            #expect(cafePayment.merchantId == cafe.account.id && cafePayment.amount == 1_000 && cafePayment.receipt == cafeResults.results[0].receipt)
            #expect(bakeryPayment.merchantId == bakery.account.id && bakeryPayment.amount == 700
                && bakeryPayment.receipt == bakeryResults.results[0].receipt)
            let receipts = try [cafePayment, bakeryPayment].map { try Receipt(encoded: [UInt8](Data(base64Encoded: $0.receipt!)!)) }
            #expect(receipts.map(\.transactionID) == [
                PreAuthorization.transferID(of: voucher.voucher.voucherID, sequence: 1),
                PreAuthorization.transferID(of: voucher.voucher.voucherID, sequence: 2),
            ])
            #expect(receipts.allSatisfy { $0.transactionID!.hasPrefix("offline:") })

            // One paid online, the other offline.
            let other = try PaymentID(bytes: Array(repeating: 0x43, count: 16))
            let online = try request(by: cafe, id: other, amount: 400, online: true)
            _ = try await cafe.client.createPayment(online)
            #expect(try await cafe.client.accept(try ledger.acceptance(of: online, by: bob), request: nil).status == .settled)
            let offline = try voucher.pay(try request(by: bakery, id: other, amount: 300, online: false), sequence: 3, spentBefore: 1_700)
            #expect(try await bakery.client.settle([offline], operation: "batch-3").results.map(\.result) == [.settled])
            #expect(try await cafe.client.payment(other).amount == 400)
            #expect(try await bakery.client.payment(other).amount == 300)

            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_400)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
