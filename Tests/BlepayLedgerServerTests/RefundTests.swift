import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Refunds over HTTP on both databases: money of a settled payment back to the book that paid it, never more than it
/// paid, even when refunds race; a ledger-signed receipt for each; only the payment's merchant refunds.
@Suite struct RefundTests {
    @Test(arguments: StorageKind.allCases)
    func fullAndPartialRefundsMoveMoneyBackUntilThePaymentIsRefunded(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let first = try await Self.paid(ledger, cafe, alice, amount: 1_000)

            let full = try await cafe.client.refund(first.paymentID, CreateRefund(amount: nil, reason: "returned"), idempotencyKey: "full")
            #expect(full.amount == 1_000 && full.refunded == 1_000 && full.currency == "EUR" && full.reason == "returned")
            #expect(full.paymentId == first.paymentID.description && full.merchantId == cafe.account.id && full.status == "settled")
            #expect(try await Self.posted(ledger, cafe, alice) == [0, 10_000])
            let receipt = try RefundReceipt(encoded: [UInt8](try #require(Data(base64Encoded: full.receipt))))
            try receipt.verify(trusting: TrustedLedgerKeys([ledger.server.ledgerKey.publicKey]))
            #expect(receipt.payerKey == alice.key.publicKey && receipt.paymentID == first.paymentID)
            #expect(receipt.paidMinorUnits == 1_000 && receipt.refundedMinorUnits == 1_000 && receipt.refundID == full.id)
            #expect(try await cafe.client.payment(first.paymentID).refunded == 1_000)
            try await Self.expectRefused(.refundExceedsPayment, status: 422) {
                _ = try await cafe.client.refund(first.paymentID, CreateRefund(amount: nil, reason: nil), idempotencyKey: "again")
            }

            // 600 paid (500 and a tip of 100): 200, then 300, then 200 more is past it and moves nothing.
            let second = try await Self.paid(ledger, cafe, alice, amount: 500, tip: 100)
            let a = try await cafe.client.refund(second.paymentID, CreateRefund(amount: 200, reason: nil), idempotencyKey: "a")
            #expect(a.refunded == 200)
            #expect(try await Self.posted(ledger, cafe, alice) == [400, 9_600])
            let b = try await cafe.client.refund(second.paymentID, CreateRefund(amount: 300, reason: nil), idempotencyKey: "b")
            #expect(b.refunded == 500)
            #expect(try await Self.posted(ledger, cafe, alice) == [100, 9_900])
            try await Self.expectRefused(.refundExceedsPayment, status: 422) {
                _ = try await cafe.client.refund(second.paymentID, CreateRefund(amount: 200, reason: nil), idempotencyKey: "c")
            }
            #expect(try await Self.posted(ledger, cafe, alice) == [100, 9_900])
            #expect(try await cafe.client.refunds(of: second.paymentID) == [a, b])
            #expect(try await alice.client.refunds(of: second.paymentID) == [a, b])
            #expect(try await alice.client.payment(second.paymentID).refunded == 500)
            // Nothing, another currency's worth or a bad reason is the input's fault.
            for (body, field) in [(CreateRefund(amount: 0, reason: nil), "amount"), (CreateRefund(amount: 1, reason: "\u{202E}x"), "reason")] {
                try await Self.expectInvalid(field) { _ = try await cafe.client.refund(second.paymentID, body, idempotencyKey: "bad-\(field)") }
            }
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aReplayedRefundAnswersTheSameRefundAndMovesNothing(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let payment = try await Self.paid(ledger, cafe, alice, amount: 1_000)
            let path = "/v1/payments/\(payment.paymentID)/refunds"
            func post(_ amount: Int64) async throws -> RunningLedger.RawAnswer {
                let body = try LedgerClient.encode(CreateRefund(amount: amount, reason: nil))
                return try await ledger.raw("POST", path,
                    headers: ledger.signed("POST", path, body: body, device: cafe.device, idempotencyKey: "refund-1"), body: body)
            }
            let first = try await post(300)
            let again = try await post(300)
            #expect(first.status == 201 && again.status == 201 && again.body == first.body)
            #expect(again.headers["Idempotent-Replayed"].first == "true")
            #expect(try await Self.posted(ledger, cafe, alice) == [700, 9_300])
            #expect(try await cafe.client.refunds(of: payment.paymentID).count == 1)
            #expect(try await post(400).status == 409)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func onlyTheMerchantRefundsAndOnlyASettledPayment(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let payment = try await Self.paid(ledger, cafe, alice, amount: 1_000)
            let body = CreateRefund(amount: 100, reason: nil)
            await Self.expectStatus(403) { _ = try await alice.client.refund(payment.paymentID, body, idempotencyKey: "alice") }
            await Self.expectStatus(404) { _ = try await bakery.client.refund(payment.paymentID, body, idempotencyKey: "bakery") }
            await Self.expectStatus(404) { _ = try await bakery.client.refunds(of: payment.paymentID) }
            // The operator names the merchant.
            await Self.expectStatus(400) { _ = try await ledger.admin.refund(payment.paymentID, body, idempotencyKey: "admin") }
            let path = "/v1/payments/\(payment.paymentID)/refunds?merchant=\(cafe.account.id)"
            let byOperator: RefundResource = try await ledger.admin.post(path, body, operation: "admin")
            #expect(byOperator.refunded == 100)

            let open = try ledger.request(by: cafe, amount: 500)
            _ = try await cafe.client.createPayment(open)
            try await Self.expectRefused(.paymentNotSettled, status: 409) {
                _ = try await cafe.client.refund(open.paymentID, body, idempotencyKey: "open")
            }
            _ = try await cafe.client.cancelPayment(open.paymentID)
            try await Self.expectRefused(.paymentNotSettled, status: 409) {
                _ = try await cafe.client.refund(open.paymentID, body, idempotencyKey: "cancelled")
            }
            #expect(try await Self.posted(ledger, cafe, alice) == [900, 9_100])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anOfflineSettledPaymentIsRefundedToTheVouchersInstrument(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let (request, acceptance) = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1,
                spentBefore: 0)
            #expect(try await cafe.client.settle([(request, acceptance)], operation: "batch").results.map(\.result) == [.settled])
            #expect(try await Self.posted(ledger, cafe, alice) == [1_000, 7_000])

            let refund = try await cafe.client.refund(request.paymentID, CreateRefund(amount: 400, reason: nil), idempotencyKey: "r")
            #expect(refund.refunded == 400)
            #expect(try await Self.posted(ledger, cafe, alice) == [600, 7_400])
            let receipt = try RefundReceipt(encoded: [UInt8](try #require(Data(base64Encoded: refund.receipt))))
            try receipt.verify(trusting: TrustedLedgerKeys([ledger.server.ledgerKey.publicKey]))
            #expect(receipt.payerKey == alice.key.publicKey && receipt.paidMinorUnits == 1_000)
            #expect(try await alice.client.payment(request.paymentID).refunded == 400)
            try await Self.expectRefused(.refundExceedsPayment, status: 422) {
                _ = try await cafe.client.refund(request.paymentID, CreateRefund(amount: 601, reason: nil), idempotencyKey: "r2")
            }
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func concurrentRefundsOfOnePaymentNeverExceedIt(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 1_000)
            let payment = try await Self.paid(ledger, cafe, alice, amount: 100)
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        do {
                            _ = try await cafe.client.refund(payment.paymentID, CreateRefund(amount: 30, reason: nil),
                                idempotencyKey: "race-\(index)")
                            return "refunded"
                        } catch {
                            return (error as? LedgerClientError)?.paymentError.code.name ?? "\(error)"
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "refunded" }.count == 3)
            #expect(outcomes.filter { $0 == "refund-exceeds-payment" }.count == 5)
            #expect(try await Self.posted(ledger, cafe, alice) == [10, 990])
            #expect(try await cafe.client.refunds(of: payment.paymentID).map(\.refunded) == [30, 60, 90])
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func devicesPageThroughTheRefundsOfTheirPayments(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let one = try await Self.paid(ledger, cafe, alice, amount: 1_000)
            let two = try await Self.paid(ledger, cafe, alice, amount: 1_000)
            let bobs = try await Self.paid(ledger, bakery, bob, amount: 1_000)
            var made: [RefundResource] = []
            for (merchant, payment) in [(cafe, one), (bakery, bobs), (cafe, two), (cafe, one)] {
                made.append(try await merchant.client.refund(payment.paymentID, CreateRefund(amount: 100, reason: nil),
                    idempotencyKey: "r-\(made.count)"))
            }
            let alices = [made[0], made[2], made[3]]
            let page = try await alice.client.refunds(after: nil, limit: 2)
            #expect(page.data == Array(alices.prefix(2)))
            let rest = try await alice.client.refunds(after: page.cursor, limit: 2)
            #expect(rest.data == [alices[2]])
            let none = try await alice.client.refunds(after: rest.cursor)
            #expect(none.data.isEmpty && none.cursor == rest.cursor)
            #expect(try await cafe.client.refunds(after: nil).data == alices)
            #expect(try await bob.client.refunds(after: nil).data == [made[1]])
            #expect(try await bakery.client.refunds(after: nil).data == [made[1]])
            await Self.expectStatus(400) { _ = try await cafe.client.refunds(after: "x") }
            await Self.expectStatus(400) { _ = try await cafe.client.refunds(after: nil, limit: 0) }
        }
    }

    /// A settled online payment of `amount` and `tip` by `customer` to `merchant`.
    static func paid(_ ledger: RunningLedger, _ merchant: RunningLedger.Party, _ customer: RunningLedger.Party,
        amount: UInt64, tip: UInt64 = 0) async throws -> PaymentRequest
    {
        let request = try ledger.request(by: merchant, amount: amount)
        let payment = try await customer.client.accept(try ledger.acceptance(of: request, by: customer, tip: tip), request: request)
        #expect(payment.status == .settled && payment.refunded == 0)
        return request
    }

    /// The accounts' posted EUR: a merchant's book, or the sum of a customer's instruments.
    static func posted(_ ledger: RunningLedger, _ parties: RunningLedger.Party...) async throws -> [Int64] {
        var posted: [Int64] = []
        for party in parties {
            posted.append(try await ledger.admin.account(party.account.id).balances.first { $0.currency == "EUR" }?.posted ?? 0)
        }
        return posted
    }

    /// `body` is refused with `status` and the payment error `code`.
    static func expectRefused(_ code: PaymentErrorCode, status: Int, _ body: () async throws -> Void) async throws {
        let refusal = await refusal(body)
        #expect(refusal?.status == status && refusal?.detail.paymentError == code.name, "\(String(describing: refusal))")
    }

    static func expectStatus(_ status: Int, _ body: () async throws -> Void) async {
        let refusal = await refusal(body)
        #expect(refusal?.status == status, "\(String(describing: refusal))")
    }

    /// `body` is refused as invalid input naming `field`.
    static func expectInvalid(_ field: String, _ body: () async throws -> Void) async throws {
        let refusal = await refusal(body)
        #expect(refusal?.status == 400 && refusal?.detail.fields?.map(\.path) == [field], "\(String(describing: refusal))")
    }

    /// The refusal the ledger answered `body` with; nil, and an issue, when it was not refused.
    static func refusal(_ body: () async throws -> Void) async -> (status: Int, detail: ErrorBody.Detail)? {
        do {
            try await body()
        } catch {
            if case .refused(let status, let detail)? = error as? LedgerClientError { return (status, detail) }
            Issue.record("\(error)")
            return nil
        }
        Issue.record("not refused")
        return nil
    }
}
