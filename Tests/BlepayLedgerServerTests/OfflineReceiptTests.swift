import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// A payment settled offline gets a ledger-signed receipt like an online one: in the settlement's answer and from
/// `GET /v1/payments/{id}`, for its merchant and its paying customer only; over HTTP on both databases.
@Suite struct OfflineReceiptTests {
    @Test(arguments: StorageKind.allCases)
    func aSettledOfflinePaymentHasTheLedgerSignedReceiptForBothPartiesAndNoOneElse(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let request = try ledger.request(by: cafe, amount: 1_000, online: false)
            let presentation = try PreAuthorizationPresentation(voucher: voucher.voucher, sequence: 1, spentBeforeMinorUnits: 0)
            let acceptance = try ledger.acceptance(of: request, by: alice, tip: 150, preAuthorization: presentation)
            let refused = try voucher.pay(try ledger.request(by: cafe, amount: 5_000, online: false), sequence: 2, spentBefore: 1_150)

            let results = try await cafe.client.settle([(request, acceptance), refused], operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled, .voucherExceeded])
            #expect(results.results[1].receipt == nil)
            let encoded = try #require(results.results[0].receipt)
            let receipt = try Receipt(encoded: [UInt8](try #require(Data(base64Encoded: encoded))))
            #expect(receipt.status == .settled && receipt.paymentID == request.paymentID)
            #expect(receipt.transactionID == PreAuthorization.transferID(of: voucher.voucher.voucherID, sequence: 1))
            #expect(receipt.amount.minorUnits == 1_000 && receipt.tipMinorUnits == 150)
            #expect(isValidSignature(try #require(receipt.ledgerSignature), of: receipt.signingBytes, by: ledger.server.ledgerKey.publicKey))

            // The merchant and the paying customer read the same payment, with the same receipt.
            let payment = try await cafe.client.payment(request.paymentID)
            #expect(payment.status == .settled && payment.receipt == encoded)
            #expect(payment.amount == 1_000 && payment.tip == 150 && payment.merchantId == cafe.account.id)
            #expect(payment.instrumentId == alice.instrument!.id)
            #expect(try await alice.client.payment(request.paymentID) == payment)
            // Another merchant or customer may not.
            let bakery = try await ledger.merchant("Bakery")
            let bob = try await ledger.customer(balance: 0)
            for other in [bakery, bob] {
                await #expect(throws: LedgerClientError.self) { try await other.client.payment(request.paymentID) }
            }

            // A later batch with the same payment answers the same receipt; a replay answers the same bytes.
            let again = try await alice.client.settle([(request, acceptance)], operation: "batch-2")
            #expect(again.results.map(\.result) == [.alreadySettled] && again.results[0].receipt == encoded)
            let body = Array(try JSONEncoder().encode(SettlementBatch(items: [
                SettlementBatch.Item(request: Data(request.encoded).base64EncodedString(),
                    acceptance: Data(acceptance.encoded).base64EncodedString()),
            ])))
            func post() async throws -> RunningLedger.RawAnswer {
                try await ledger.raw("POST", "/v1/settlements",
                    headers: ledger.signed("POST", "/v1/settlements", body: body, device: cafe.device, idempotencyKey: "replayed"),
                    body: body)
            }
            let first = try await post()
            let replayed = try await post()
            #expect(first.status == 200 && replayed.body == first.body)
            #expect(replayed.headers["Idempotent-Replayed"].first == "true")
            #expect(try await ledger.server.audit() == [])
        }
    }
}
