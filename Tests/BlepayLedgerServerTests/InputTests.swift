import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Bad input gets a 4xx with a stable code and the field's path, and leaves nothing behind.
@Suite struct InputTests {
    func post(_ ledger: RunningLedger, _ party: RunningLedger.Party, _ path: String, _ json: String) async throws
        -> RunningLedger.RawAnswer
    {
        let body = Array(json.utf8)
        return try await ledger.raw("POST", path, headers: ledger.signed("POST", path, body: body, device: party.device), body: body)
    }

    @Test(arguments: StorageKind.allCases)
    func invalidInstrumentsAreRefusedFieldByFieldAndNotStored(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 0)
            let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 3
            let cases: [(String, String, String)] = [
                (#"{"type":"card","card":{"number":"4242424242424241","expiryMonth":12,"expiryYear":\#(year),"cvc":"123"}}"#, "card.number", "invalid-checksum"),
                (#"{"type":"card","card":{"number":"4242424242424242","expiryMonth":1,"expiryYear":2020,"cvc":"123"}}"#, "card.expiryYear", "expired"),
                (#"{"type":"card","card":{"number":"378282246310005","expiryMonth":12,"expiryYear":\#(year),"cvc":"123"}}"#, "card.cvc", "invalid-cvc"),
                (#"{"type":"bank_account","bankAccount":{"firstName":"A","lastName":"B","routingNumber":"011000016","accountNumber":"12345678","accountType":"checking"}}"#, "bankAccount.routingNumber", "invalid-checksum"),
                (#"{"type":"card"}"#, "card", "missing"),
                (#"{"type":"card","card":{"number":4242,"expiryMonth":12,"expiryYear":\#(year),"cvc":"123"}}"#, "card.number", "wrong-type"),
                (#"{"type":"gold"}"#, "type", "invalid-value"),
            ]
            for (json, path, code) in cases {
                let answer = try await post(ledger, alice, "/v1/instruments", json)
                #expect(answer.status == 400, "\(json)")
                #expect(answer.error?.code == "validation.failed")
                #expect(answer.error?.fields?.contains { $0.path == path && $0.code == code } == true,
                    "\(json) → \(String(decoding: answer.body, as: UTF8.self))")
                // The card number never comes back, not even in an error.
                #expect(!String(decoding: answer.body, as: UTF8.self).contains("4242424242424241"))
            }
            #expect(try await alice.client.instruments().count == 1)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func malformedBodiesAndMessagesAreRefusedWithStableCodes(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let notJSON = try await post(ledger, cafe, "/v1/payments", "{not json")
            #expect(notJSON.status == 400 && notJSON.error?.code == "request.malformed")
            let notBase64 = try await post(ledger, cafe, "/v1/payments", #"{"request":"%%%"}"#)
            #expect(notBase64.error?.fields?.first?.path == "request" && notBase64.error?.fields?.first?.code == "invalid-base64")
            let truncated = try await post(ledger, cafe, "/v1/payments", #"{"request":"AQID"}"#)
            #expect(truncated.status == 400 && truncated.error?.fields?.first?.path == "request")
            let unknown = try await ledger.raw("GET", "/v1/payments/nope",
                headers: ledger.signed("GET", "/v1/payments/nope", body: [], device: cafe.device, idempotencyKey: nil))
            #expect(unknown.status == 404 && unknown.error?.code == "not-found")
            let big = [UInt8](repeating: 0x20, count: (1 << 20) + 1)
            #expect(try await ledger.raw("POST", "/v1/payments", body: big).status == 413)
        }
    }

    /// Signatures are checked before the write transaction once the ledger knows the device's key (after its first
    /// request); forgeries are refused all the same, and leave the payment open for the real acceptance.
    @Test(arguments: StorageKind.allCases)
    func requestsAndAcceptancesNotSignedByTheirDevicesAreRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let other = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 100)
            #expect(try await cafe.client.createPayment(request).status == .authorizationRequired)

            func refusal(_ call: () async throws -> PaymentResource) async throws -> (Int, String)? {
                do {
                    _ = try await call()
                    return nil
                } catch let error as LedgerClientError {
                    guard case .refused(let status, _) = error else { throw error }
                    return (status, error.code)
                }
            }
            let othersRequest = try ledger.request(by: other, amount: 100)
            var inCafesName = try ledger.request(by: cafe, amount: 100)
            inCafesName = try inCafesName.signed(by: other.key)
            for forged in [othersRequest, inCafesName] {
                let refused = try await refusal { try await cafe.client.createPayment(forged) }
                #expect(refused?.0 == 422 && refused?.1 == "ledger.invalid-signature", "\(String(describing: refused))")
            }

            let genuine = try ledger.acceptance(of: request, by: alice)
            let forgedAcceptance = try PaymentAcceptance(
                paymentID: genuine.paymentID, amount: genuine.amount, tipMinorUnits: genuine.tipMinorUnits,
                instrumentID: genuine.instrumentID, delegatedInstrument: genuine.delegatedInstrument, createdAt: genuine.createdAt,
                requestHash: genuine.requestHash, sessionHash: genuine.sessionHash, customerKey: alice.key.publicKey,
                preAuthorization: nil, signature: other.key.sign(genuine.signingBytes))
            let refused = try await refusal { try await alice.client.accept(forgedAcceptance, request: nil) }
            #expect(refused?.0 == 422 && refused?.1 == "ledger.invalid-signature", "\(String(describing: refused))")
            #expect(try await alice.client.accept(genuine, request: nil).status == .settled)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func wholeBodiesRoutesAndCurrenciesAreRefusedWithTheAPIsErrors(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 0)
            let array = try await post(ledger, cafe, "/v1/payments", "[1]")
            #expect(array.status == 400 && array.error?.code == "request.malformed", "\(array.error.debugDescription)")
            let nowhere = try await ledger.raw("GET", "/v1/nowhere")
            #expect(nowhere.status == 404 && nowhere.error?.code == "not-found")
            #expect(nowhere.headers["Content-Type"].first == "application/json")
            do {
                _ = try await ledger.admin.deposit(Deposit(amount: 100, currency: "XYZ"), into: alice.instrument!.id)
                Issue.record("deposited in an unknown currency")
            } catch let error as LedgerClientError {
                guard case .refused(let status, let detail) = error else { throw error }
                #expect(status == 400 && detail.fields?.first?.path == "currency", "\(detail)")
            }
        }
    }

    @Test(arguments: StorageKind.allCases)
    func numbersAtTheEdgesAreRefusedOrClampedNeverTrapped(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let payment = try await cafe.client.createPayment(try ledger.request(by: cafe, amount: 100))
            for wait in ["nan", "-inf", "-1e400", "soon"] {
                let path = "/v1/payments/\(payment.id)?wait=\(wait)"
                let answer = try await ledger.raw("GET", path,
                    headers: ledger.signed("GET", path, body: [], device: cafe.device, idempotencyKey: nil))
                #expect(answer.status == 200, "wait=\(wait)")
            }
            let ancient = ledger.signed("GET", "/v1/payments/\(payment.id)", body: [], device: cafe.device,
                timestamp: -Int64.max, idempotencyKey: nil)
            #expect(try await ledger.raw("GET", "/v1/payments/\(payment.id)", headers: ancient).error?.code == "auth.stale-timestamp")

            let later = Timestamp(millisecondsSince1970: 1 << 63)
            let future = try PaymentRequest(
                paymentID: PaymentID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) }),
                amount: Money(minorUnits: 100, currency: Currency("EUR")), reference: nil, merchantID: cafe.account.id,
                merchantName: cafe.account.name, createdAt: later, expiresAt: later.adding(milliseconds: 60_000),
                businessOnline: true, signature: .unsigned
            ).signed(by: cafe.key)
            let refused = try await post(ledger, cafe, "/v1/payments",
                #"{"request":"\#(Data(future.encoded).base64EncodedString())"}"#)
            #expect(refused.status == 400 && refused.error?.fields?.first?.code == "created-in-future",
                "\(refused.error.debugDescription)")
        }
    }
}

extension InputTests {
    /// A merchant's account name is what its certificates show payers: nothing invisible that could make it pass for
    /// another merchant's, or reorder what is shown around it, is taken.
    @Test(arguments: StorageKind.allCases)
    func aNameThatCouldPassForAnotherIsRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            for (n, name) in ["Bob\u{202E}skcubratS", "Star\u{200B}bucks", "\u{2066}Starbucks\u{2069}"].enumerated() {
                do {
                    _ = try await ledger.admin.post(
                        "/v1/accounts", CreateAccount(kind: .merchant, name: name), operation: "spoof-\(n)",
                        as: AccountResource.self)
                    Issue.record("the name \(name.unicodeScalars.map(\.value)) was taken")
                } catch {
                    guard case LedgerClientError.refused(let status, let detail) = error else { throw error }
                    #expect(status == 400 && detail.fields?.first?.path == "name" && detail.fields?.first?.code == "invalid-text")
                }
            }
            // Letters that only look like the plain ones: a Cyrillic а and о among Latin letters, Greek ο, fullwidth
            // and mathematical bold letters.
            for (n, name) in ["St\u{430}rbucks", "B\u{43E}b's Kiosk", "G\u{3BF}ogle Café", "\u{FF33}tarbucks", "\u{1D412}tarbucks"]
                .enumerated()
            {
                do {
                    _ = try await ledger.admin.post(
                        "/v1/accounts", CreateAccount(kind: .merchant, name: name), operation: "confusable-\(n)",
                        as: AccountResource.self)
                    Issue.record("the name \(name.unicodeScalars.map(\.value)) was taken")
                } catch {
                    guard case LedgerClientError.refused(let status, let detail) = error else { throw error }
                    #expect(status == 400 && detail.fields?.first?.code == "confusable-text", "\(detail)")
                }
            }
            for (n, name) in ["Кафе Пушкин", "Καφενείο", "喫茶店 Kissa", "Bäckerei Müller 24"].enumerated() {
                let account = try await ledger.admin.post(
                    "/v1/accounts", CreateAccount(kind: .merchant, name: name), operation: "one-script-\(n)",
                    as: AccountResource.self)
                #expect(account.name == name)
            }
            let cafe = try await ledger.admin.post(
                "/v1/accounts", CreateAccount(kind: .merchant, name: "Café Zürich"), operation: "plain", as: AccountResource.self)
            #expect(cafe.name == "Café Zürich")
        }
    }
}
