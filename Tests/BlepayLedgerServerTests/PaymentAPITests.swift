import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Payments over HTTP, on both databases: the statuses, the postings, receipts, refusals and long-polling.
@Suite struct PaymentAPITests {
    @Test(arguments: StorageKind.allCases)
    func anAcceptedPaymentSettlesMovesAmountPlusTipAndHasAVerifiableReceipt(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 2_550)
            let created = try await cafe.client.createPayment(request)
            #expect(created.status == .authorizationRequired)
            #expect(created.amount == 2_550 && created.merchantId == cafe.account.id && created.reference == "order-1")

            let paid = try await alice.client.accept(try ledger.acceptance(of: request, by: alice, tip: 250), request: nil)
            #expect(paid.status == .settled)
            #expect(paid.history.map(\.status) == [.authorizationRequired, .authorizing, .authorized, .executed, .settled])
            let receipt = try Receipt(encoded: [UInt8](Data(base64Encoded: try #require(paid.receipt))!))
            #expect(receipt.paymentID == request.paymentID && receipt.amount.minorUnits == 2_550 && receipt.tipMinorUnits == 250)
            #expect(isValidSignature(try #require(receipt.ledgerSignature), of: receipt.signingBytes, by: ledger.server.ledgerKey.publicKey))

            let card = try #require(try await alice.client.instruments().first)
            #expect(card.balances == [BalanceResource(currency: "EUR", posted: 10_000 - 2_800, held: 0)])
            let merchant = try await ledger.admin.account(cafe.account.id)
            #expect(merchant.balances == [BalanceResource(currency: "EUR", posted: 2_800, held: 0)])
            // The business sees the same payment; the books are sound.
            #expect(try await cafe.client.payment(request.paymentID) == paid)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theBusinessCanForwardTheAcceptanceAndACustomerCanExecuteForAnOfflineBusiness(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let forwarded = try ledger.request(by: cafe, amount: 1_000)
            let acceptance = try ledger.acceptance(of: forwarded, by: alice)
            #expect(try await cafe.client.accept(acceptance, request: forwarded).status == .settled)
            // Accepting again is answered with the settled payment, not a second execution.
            #expect(try await cafe.client.accept(acceptance, request: forwarded).status == .settled)

            let offline = try ledger.request(by: cafe, amount: 500, online: false)
            #expect(try await alice.client.accept(try ledger.acceptance(of: offline, by: alice), request: offline).status == .settled)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 8_500)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func refusalsFailThePaymentWithTheTaxonomysReasonAndMoveNothing(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 1_000)
            let tooMuch = try ledger.request(by: cafe, amount: 5_000)
            let failed = try await alice.client.accept(try ledger.acceptance(of: tooMuch, by: alice), request: tooMuch)
            #expect(failed.status == .failed && failed.failureReason == "insufficient-funds" && failed.receipt == nil)

            _ = try await ledger.admin.block(alice.instrument!.id)
            let blocked = try ledger.request(by: cafe, amount: 100)
            let refused = try await alice.client.accept(try ledger.acceptance(of: blocked, by: alice), request: blocked)
            #expect(refused.failureReason == "blocked")

            // A wrong acceptance (signed by another key) is refused and leaves the payment open.
            let open = try ledger.request(by: cafe, amount: 100)
            _ = try await cafe.client.createPayment(open)
            let forged = try ledger.acceptance(of: open, by: alice, signer: SigningKey())
            await #expect(throws: LedgerClientError.self) { try await cafe.client.accept(forged, request: nil) }
            #expect(try await cafe.client.payment(open.paymentID).status == .authorizationRequired)

            #expect(try await alice.client.instruments().first?.balances.first?.posted == 1_000)
            #expect(try await ledger.admin.account(cafe.account.id).balances.allSatisfy { $0.posted == 0 })
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aCancelledPaymentCannotBeAcceptedAndOnlyItsPartiesSeeIt(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 0)
            let request = try ledger.request(by: cafe, amount: 700)
            _ = try await cafe.client.createPayment(request)
            await #expect(throws: LedgerClientError.self) { try await bob.client.payment(request.paymentID) }
            #expect(try await cafe.client.cancelPayment(request.paymentID).status == .cancelled)
            do {
                _ = try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: nil)
                Issue.record("a cancelled payment was accepted")
            } catch let error as LedgerClientError {
                guard case .refused(let status, _) = error else { throw error }
                #expect(status == 409)
            }
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 10_000)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aStatusReadWaitsForTheChange(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 300)
            _ = try await cafe.client.createPayment(request)
            let waiting = Task { try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired) }
            try await Task.sleep(for: .milliseconds(300))
            _ = try await alice.client.accept(try ledger.acceptance(of: request, by: alice), request: nil)
            #expect(try await waiting.value.status == .settled)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anOpenPaymentExpiresAndTheWaitingReadSeesIt(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let request = try ledger.request(by: cafe, amount: 300, expiresIn: 1_000)
            _ = try await cafe.client.createPayment(request)
            var payment = try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired)
            if payment.status == .authorizationRequired {  // the sweeper runs each second; one more wait covers it
                payment = try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired)
            }
            #expect(payment.status == .failed && payment.failureReason == "expired")
        }
    }
}
