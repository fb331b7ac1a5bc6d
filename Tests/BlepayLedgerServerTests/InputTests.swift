import BlepayLedger
import BlepayLedgerClient
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

    @Test(arguments: StorageKind.allCases)
    func aRequestSignedByAnotherMerchantIsRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let other = try await ledger.merchant("Bakery")
            let request = try ledger.request(by: other, amount: 100)
            do {
                _ = try await cafe.client.createPayment(request)
                Issue.record("accepted another merchant's request")
            } catch let error as LedgerClientError {
                #expect(error.code == "ledger.invalid-signature")
                guard case .refused(let status, _) = error else { throw error }
                #expect(status == 422)
            }
        }
    }
}
