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

    struct Refusal: Equatable {
        let status: Int
        let code: String
        let paymentError: String?
    }

    /// The refusal `client` gets for `acceptance`; nil if it was carried out.
    func refusal(_ client: LedgerClient, _ acceptance: PaymentAcceptance) async throws -> Refusal? {
        do {
            _ = try await client.accept(acceptance, request: nil)
            return nil
        } catch {
            guard case .refused(let status, let detail) = error else { throw error }
            return Refusal(status: status, code: detail.code, paymentError: detail.paymentError)
        }
    }

    /// One request went to several customers. Each acceptance refused for its payer (funds, a blocked card, an
    /// instrument not theirs, a signature, an amount) leaves the payment open with nothing held; the first customer
    /// who can pay pays, and after that every acceptance is too late.
    @Test(arguments: StorageKind.allCases)
    func aPayersRefusalLeavesThePaymentOpenAndTheNextCustomerPays(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 1_000)
            let bob = try await ledger.customer(balance: 10_000)
            let carol = try await ledger.customer(balance: 10_000)
            _ = try await ledger.admin.block(bob.instrument!.id)
            let request = try ledger.request(by: cafe, amount: 5_000)
            _ = try await cafe.client.createPayment(request)
            var withCarolsCard = alice
            withCarolsCard.instrument = carol.instrument
            let genuine = try ledger.acceptance(of: request, by: carol)
            let forged = try PaymentAcceptance(
                paymentID: genuine.paymentID, amount: genuine.amount, tipMinorUnits: genuine.tipMinorUnits,
                instrumentID: genuine.instrumentID, delegatedInstrument: false, createdAt: genuine.createdAt,
                requestHash: genuine.requestHash, sessionHash: genuine.sessionHash, customerKey: carol.key.publicKey,
                preAuthorization: nil, signature: try SigningKey().sign(genuine.signingBytes))

            let refused: [(LedgerClient, PaymentAcceptance, Refusal)] = [
                (alice.client, try ledger.acceptance(of: request, by: alice),
                 Refusal(status: 422, code: "ledger.insufficient-funds", paymentError: "insufficient-funds")),
                (cafe.client, try ledger.acceptance(of: request, by: bob), Refusal(status: 422, code: "ledger.blocked", paymentError: "blocked")),
                (alice.client, try ledger.acceptance(of: request, by: withCarolsCard),
                 Refusal(status: 422, code: "ledger.unknown-account", paymentError: "invalid-instrument")),
                (cafe.client, forged, Refusal(status: 422, code: "ledger.invalid-signature", paymentError: "invalid-credentials")),
                (carol.client, try ledger.acceptance(of: request, by: carol, amount: 4_999),
                 Refusal(status: 422, code: "ledger.amount-mismatch", paymentError: "amount-mismatch")),
            ]
            for (client, acceptance, expected) in refused {
                #expect(try await refusal(client, acceptance) == expected)
                let open = try await cafe.client.payment(request.paymentID)
                #expect(open.status == .authorizationRequired && open.history.count == 1 && open.failureReason == nil)
            }
            #expect(try await ledger.admin.account(bob.account.id).balances == [BalanceResource(currency: "EUR", posted: 10_000, held: 0)])

            let paid = try await carol.client.accept(try ledger.acceptance(of: request, by: carol, tip: 100), request: nil)
            #expect(paid.status == .settled && paid.instrumentId == carol.instrument!.id)
            let receipt = try Receipt(encoded: [UInt8](Data(base64Encoded: try #require(paid.receipt))!))
            #expect(isValidSignature(try #require(receipt.ledgerSignature), of: receipt.signingBytes, by: ledger.server.ledgerKey.publicKey))
            #expect(try await refusal(alice.client, try ledger.acceptance(of: request, by: alice, tip: 1))
                == Refusal(status: 409, code: "ledger.invalid-status", paymentError: "already-paid"))

            #expect(try await alice.client.instruments().first?.balances == [BalanceResource(currency: "EUR", posted: 1_000, held: 0)])
            #expect(try await carol.client.instruments().first?.balances == [BalanceResource(currency: "EUR", posted: 4_900, held: 0)])
            #expect(try await ledger.admin.account(cafe.account.id).balances == [BalanceResource(currency: "EUR", posted: 5_100, held: 0)])
            #expect(try await ledger.server.audit() == [])
        }
    }

    /// A refused acceptance retried with its Idempotency-Key gets the same refusal, even once the card could pay
    /// (a new attempt is a new acceptance, with a key of its own); another customer's acceptance is carried out.
    @Test(arguments: StorageKind.allCases)
    func aRetriedRefusalIsReplayedAndAnotherCustomersAcceptanceProceeds(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 0)
            let bob = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 2_000)
            _ = try await cafe.client.createPayment(request)
            let path = "/v1/payments/\(request.paymentID)/acceptance"
            func body(_ customer: RunningLedger.Party) throws -> [UInt8] {
                let acceptance = try ledger.acceptance(of: request, by: customer)
                return try LedgerClient.encode(AcceptPayment(acceptance: Data(acceptance.encoded).base64EncodedString(), request: nil))
            }
            func accept(_ customer: RunningLedger.Party, _ body: [UInt8], key: String) async throws -> RunningLedger.RawAnswer {
                try await ledger.raw("POST", path,
                    headers: ledger.signed("POST", path, body: body, device: customer.device, idempotencyKey: key), body: body)
            }

            let alices = try body(alice)
            let first = try await accept(alice, alices, key: "accept-1")
            #expect(first.status == 422 && first.error?.code == "ledger.insufficient-funds")
            #expect(first.error?.paymentError == "insufficient-funds" && first.headers["Idempotent-Replayed"].isEmpty)
            _ = try await ledger.admin.deposit(Deposit(amount: 10_000, currency: "EUR"), into: alice.instrument!.id)
            let retried = try await accept(alice, alices, key: "accept-1")
            #expect(retried.status == 422 && retried.body == first.body && retried.headers["Idempotent-Replayed"] == ["true"])
            #expect(try await cafe.client.payment(request.paymentID).status == .authorizationRequired)

            let paid = try await accept(bob, try body(bob), key: "accept-2")
            #expect(paid.status == 200 && paid.headers["Idempotent-Replayed"].isEmpty)
            #expect(try JSONDecoder().decode(PaymentResource.self, from: Data(paid.body)).status == .settled)
            let late = try await accept(alice, alices, key: "accept-1")
            #expect(late.status == 422 && late.body == first.body)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 10_000)
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
            let request = try ledger.request(by: cafe, amount: 300, expiresIn: 3_000)
            _ = try await cafe.client.createPayment(request)
            var payment = try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired)
            if payment.status == .authorizationRequired {  // the sweeper runs each second; one more wait covers it
                payment = try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired)
            }
            #expect(payment.status == .failed && payment.failureReason == "expired")
        }
    }
}
