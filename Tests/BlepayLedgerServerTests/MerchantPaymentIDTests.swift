import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// A payment id is its merchant's: two merchants' payments of one id are two payments, whichever path pays each, and
/// a merchant who learns another's id cannot take it first.
@Suite struct MerchantPaymentIDTests {
    /// The ledger's refusal code for `call`.
    func refusal<T>(_ call: () async throws -> T) async throws -> String? {
        do {
            _ = try await call()
            return nil
        } catch let error as LedgerClientError {
            guard case .refused(_, let detail) = error else { throw error }
            return detail.code
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anotherMerchantTakingAnIdFirstDoesNotStopTheMerchantsOwnPayment(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let id = try PaymentID(bytes: Array(repeating: 0x51, count: 16))

            // The bakery learned the café's payment id (its device at the café's till saw the request) and uses it first.
            let taken = try ledger.request(by: bakery, id: id, amount: 300)
            _ = try await bakery.client.createPayment(taken)
            #expect(try await bakery.client.accept(try ledger.acceptance(of: taken, by: bob), request: nil).status == .settled)
            // The café's own payment of that id is created and paid as any other.
            let genuine = try ledger.request(by: cafe, id: id, amount: 1_000)
            #expect(try await cafe.client.createPayment(genuine).status == .authorizationRequired)
            let paid = try await cafe.client.accept(try ledger.acceptance(of: genuine, by: alice), request: nil)
            #expect(paid.status == .settled && paid.merchantId == cafe.account.id)

            // Each merchant and its customer read their own payment, with a receipt of its own transfer.
            var transactions: Set<String?> = []
            for (party, merchant, amount) in [(cafe, cafe, 1_000), (alice, cafe, 1_000), (bakery, bakery, 300), (bob, bakery, 300)] {
                let payment = try await party.client.payment(id)
                let receipt = try Receipt(encoded: [UInt8](try #require(payment.receipt.flatMap { Data(base64Encoded: $0) })))
                #expect(payment.merchantId == merchant.account.id && payment.amount == Int64(amount))
                #expect(receipt.merchantID == merchant.account.id && receipt.transactionID.map(TimeOrderedName.isOne) == true)
                transactions.insert(receipt.transactionID)
            }
            #expect(transactions.count == 2, "one transfer for each merchant's payment of the id")
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 300)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 9_000)
            #expect(try await bob.client.instruments().first?.balances.first?.posted == 9_700)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func cancellingExpiringAndReadingFindTheMerchantsOwnPayment(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)

            // The bakery cancels its request of the id first; the customer then brings the café's request herself.
            let cancelledID = try PaymentID(bytes: Array(repeating: 0x52, count: 16))
            let cancelled = try ledger.request(by: bakery, id: cancelledID, amount: 200)
            #expect(try await bakery.client.cancelPayment(cancelledID, request: cancelled).status == .cancelled)
            let brought = try ledger.request(by: cafe, id: cancelledID, amount: 500, online: false)
            #expect(try await alice.client.accept(try ledger.acceptance(of: brought, by: alice), request: brought).status == .settled)
            #expect(try await refusal { try await cafe.client.cancelPayment(cancelledID) } == LedgerError.Code.invalidStatus.rawValue)
            #expect(try await bakery.client.cancelPayment(cancelledID).status == .cancelled)

            // A customer who paid one id at both merchants names the one she means.
            let sharedID = try PaymentID(bytes: Array(repeating: 0x53, count: 16))
            let atBakery = try ledger.request(by: bakery, id: sharedID, amount: 100)
            let atCafe = try ledger.request(by: cafe, id: sharedID, amount: 400)
            _ = try await bakery.client.createPayment(atBakery)
            _ = try await cafe.client.createPayment(atCafe)
            _ = try await bakery.client.accept(try ledger.acceptance(of: atBakery, by: alice), request: nil)
            // Sent by the customer without the request: the payment is the one whose request she signed.
            let paidAtCafe = try await alice.client.accept(try ledger.acceptance(of: atCafe, by: alice), request: nil)
            #expect(paidAtCafe.merchantId == cafe.account.id)
            #expect(try await refusal { try await alice.client.payment(sharedID) } == "payment.merchant-required")
            #expect(try await alice.client.payment(sharedID, merchant: cafe.account.id).amount == 400)
            #expect(try await alice.client.payment(sharedID, merchant: bakery.account.id).amount == 100)
            #expect(try await cafe.client.payment(sharedID).amount == 400)
            #expect(try await refusal { try await cafe.client.payment(sharedID, merchant: bakery.account.id) } == "not-found")

            // The bakery's payment of an id expires; the café's stays open and is paid.
            let expiringID = try PaymentID(bytes: Array(repeating: 0x54, count: 16))
            _ = try await bakery.client.createPayment(try ledger.request(by: bakery, id: expiringID, amount: 100, expiresIn: 5_000))
            let open = try ledger.request(by: cafe, id: expiringID, amount: 700)
            _ = try await cafe.client.createPayment(open)
            var expired = try await bakery.client.payment(expiringID, waitingWhile: .authorizationRequired)
            if expired.status == .authorizationRequired {  // the sweeper runs each second; one more wait covers it
                expired = try await bakery.client.payment(expiringID, waitingWhile: .authorizationRequired)
            }
            #expect(expired.status == .failed && expired.failureReason == "expired")
            #expect(try await cafe.client.payment(expiringID).status == .authorizationRequired)
            #expect(try await cafe.client.accept(try ledger.acceptance(of: open, by: alice), request: nil).status == .settled)

            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_600)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 100)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func twoMerchantsPaymentsOfOneIdBothSettleOfflineAndOnline(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let id = try PaymentID(bytes: Array(repeating: 0x42, count: 16))

            // Both offline, from one voucher.
            let atCafe = try voucher.pay(
                try ledger.request(by: cafe, id: id, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let atBakery = try voucher.pay(
                try ledger.request(by: bakery, id: id, amount: 700, online: false), sequence: 2, spentBefore: 1_000)
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
            let online = try ledger.request(by: cafe, id: other, amount: 400)
            _ = try await cafe.client.createPayment(online)
            #expect(try await cafe.client.accept(try ledger.acceptance(of: online, by: bob), request: nil).status == .settled)
            let offline = try voucher.pay(
                try ledger.request(by: bakery, id: other, amount: 300, online: false), sequence: 3, spentBefore: 1_700)
            #expect(try await bakery.client.settle([offline], operation: "batch-3").results.map(\.result) == [.settled])
            #expect(try await cafe.client.payment(other).amount == 400)
            #expect(try await bakery.client.payment(other).amount == 300)

            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_400)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.server.audit() == [])
        }
    }

    /// Two merchants' payments of one id are refused as double spends: the audit looks for each proof at its own
    /// merchant's payment, so one merchant's proof does not stand for the other's, whether the stored answer names the
    /// merchant or (stored before answers did) the business device that settled it does.
    @Test(arguments: StorageKind.allCases)
    func theAuditLooksForEachDoubleSpendsProofAtItsOwnMerchant(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let id = try PaymentID(bytes: Array(repeating: 0x44, count: 16))

            // Alice reuses her first use of the voucher at both merchants, for their payments of one id.
            let first = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let atCafe = try voucher.pay(try ledger.request(by: cafe, id: id, amount: 700, online: false), sequence: 1, spentBefore: 1_000)
            let atBakery = try voucher.pay(
                try ledger.request(by: bakery, id: id, amount: 500, online: false), sequence: 1, spentBefore: 1_700)
            #expect(try await cafe.client.settle([first, atCafe], operation: "batch-1").results.map(\.result) == [.settled, .sequenceReused])
            let refused = try await bakery.client.settle([atBakery], operation: "batch-1").results
            #expect(refused.map(\.result) == [.sequenceReused] && refused.map(\.merchantId) == [bakery.account.id])
            // Alice brings it too: her device's answer names the bakery as well.
            #expect(try await alice.client.settle([atBakery], operation: "batch-1").results == refused)
            #expect(Set(try await ledger.admin.doubleSpends().map(\.merchantId)) == [cafe.account.id, bakery.account.id])
            #expect(try await ledger.server.audit() == [])

            // The bakery's proof is gone (and with it the block it justified): the café's does not stand for it.
            try await ledger.storage.storage.write { tx in
                try tx.run("DELETE FROM double_spends WHERE merchant = ?", [.text(bakery.account.id)])
            }
            let missing = ["payment \(id) of merchant \(bakery.account.id) was refused as a double spend without a stored proof"]
            #expect(try await ledger.server.audit() == missing)

            // Answers stored before they named their merchant: the merchant is the settling business device's (Alice's
            // device's answer can only be matched by her key, which the café's proof is against too).
            try await ledger.storage.storage.write { tx in
                for row in try tx.rows("SELECT principal, key, response FROM idempotency_keys WHERE sealed = 0", []) {
                    guard var answer = try JSONSerialization.jsonObject(with: Data(try row.blob(2))) as? [String: Any],
                        let items = answer["results"] as? [[String: Any]]
                    else { continue }
                    answer["results"] = items.map { item in item.filter { $0.key != "merchantId" } }
                    try tx.run("UPDATE idempotency_keys SET response = ? WHERE principal = ? AND key = ?",
                        [.blob(Array(try JSONSerialization.data(withJSONObject: answer))), row.values[0], row.values[1]])
                }
            }
            #expect(try await ledger.server.audit() == missing)
        }
    }
}
