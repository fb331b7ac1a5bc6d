import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Request authentication and the Idempotency-Key rule, checked on the wire.
@Suite struct SecurityTests {
    @Test(arguments: StorageKind.allCases)
    func deviceRequestsNeedAFreshValidMACAndEachNonceOnce(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 0)
            let device = alice.device
            let path = "/v1/account"
            let good = ledger.signed("GET", path, body: [], device: device, nonce: "n-1", idempotencyKey: nil)
            #expect(try await ledger.raw("GET", path, headers: good).status == 200)
            #expect(try await ledger.raw("GET", path, headers: good).error?.code == "auth.reused-nonce")

            let stale = ledger.signed("GET", path, body: [], device: device, timestamp: Int64(Date().timeIntervalSince1970) - 301)
            #expect(try await ledger.raw("GET", path, headers: stale).error?.code == "auth.stale-timestamp")

            // Signed for another path, or with a bit flipped: the MAC fails.
            let otherPath = ledger.signed("GET", "/v1/instruments", body: [], device: device)
            #expect(try await ledger.raw("GET", path, headers: otherPath).error?.code == "auth.bad-signature")
            var flipped = ledger.signed("GET", path, body: [], device: device)
            flipped[3].1 = String(flipped[3].1.dropLast()) + (flipped[3].1.hasSuffix("0") ? "1" : "0")
            let refused = try await ledger.raw("GET", path, headers: flipped)
            #expect(refused.status == 401 && refused.error?.code == "auth.bad-signature")

            #expect(try await ledger.raw("GET", path).error?.code == "auth.unauthenticated")
            let unknown = [("Blepay-Device", "dev_unknown")] + good.dropFirst()
            #expect(try await ledger.raw("GET", path, headers: Array(unknown)).status == 401)
            let missing = good.filter { $0.0 != RequestAuthentication.nonceHeader }
            #expect(try await ledger.raw("GET", path, headers: missing).error?.code == "auth.missing-header")
        }
    }

    @Test(arguments: StorageKind.allCases)
    func operatorRoutesNeedTheAdminTokenAndDevicesCannotUseThem(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let body = Array(#"{"kind":"customer","name":"Mallory"}"#.utf8)
            let wrong = try await ledger.raw("POST", "/v1/accounts",
                headers: [("Authorization", "Bearer not-the-token"), ("Idempotency-Key", "k1")], body: body)
            #expect(wrong.status == 401 && wrong.error?.code == "auth.unauthenticated")
            let alice = try await ledger.customer(balance: 0)
            let asDevice = ledger.signed("POST", "/v1/accounts", body: body, device: alice.device)
            #expect(try await ledger.raw("POST", "/v1/accounts", headers: asDevice, body: body).status == 401)
            // An enrollment token enrolls devices of its own account only, and nothing else.
            let enroll = [("Authorization", "Bearer \(alice.account.enrollmentToken!)"), ("Idempotency-Key", "k2")]
            #expect(try await ledger.raw("POST", "/v1/accounts", headers: enroll, body: body).status == 401)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theSameIdempotencyKeyReplaysTheFirstAnswerAndOtherParametersConflict(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 1_000)
            let acceptance = try ledger.acceptance(of: request, by: alice)
            let path = "/v1/payments/\(request.paymentID)/acceptance"
            let body = try LedgerClient.encode(AcceptPayment(
                acceptance: Data(acceptance.encoded).base64EncodedString(), request: Data(request.encoded).base64EncodedString()))
            let first = try await ledger.raw("POST", path,
                headers: ledger.signed("POST", path, body: body, device: alice.device, idempotencyKey: "pay-1"), body: body)
            let again = try await ledger.raw("POST", path,
                headers: ledger.signed("POST", path, body: body, device: alice.device, idempotencyKey: "pay-1"), body: body)
            #expect(first.status == 200 && again.status == 200 && again.body == first.body)
            #expect(again.headers["Idempotent-Replayed"] == ["true"])
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 9_000)

            let other = Array(#"{"acceptance":"AAAA"}"#.utf8)
            let conflict = try await ledger.raw("POST", path,
                headers: ledger.signed("POST", path, body: other, device: alice.device, idempotencyKey: "pay-1"), body: other)
            #expect(conflict.status == 409 && conflict.error?.code == "idempotency.conflict")

            let keyless = try await ledger.raw("POST", path,
                headers: ledger.signed("POST", path, body: body, device: alice.device, idempotencyKey: nil), body: body)
            #expect(keyless.status == 400 && keyless.error?.code == "idempotency.invalid-key")
        }
    }

    /// Someone on the way sends a device's request first under another idempotency key: were the key not covered by
    /// the MAC, the ledger would carry it out, and the device's own retry (its nonce now spent, a new one, its own
    /// key) would carry it out again.
    @Test(arguments: StorageKind.allCases)
    func aRequestSentUnderAnotherIdempotencyKeyIsRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 3_000)
            let acceptance = try ledger.acceptance(of: request, by: alice)
            let path = "/v1/payments/\(request.paymentID)/acceptance"
            let body = try LedgerClient.encode(AcceptPayment(
                acceptance: Data(acceptance.encoded).base64EncodedString(), request: Data(request.encoded).base64EncodedString()))
            let signed = ledger.signed("POST", path, body: body, device: alice.device, idempotencyKey: "pay-1")
            let swapped = signed.map { $0.0 == "Idempotency-Key" ? ($0.0, "pay-2") : $0 }
            let forged = try await ledger.raw("POST", path, headers: swapped, body: body)
            #expect(forged.status == 401 && forged.error?.code == "auth.bad-signature")
            let sent = try await ledger.raw("POST", path, headers: signed, body: body)
            #expect(sent.status == 200)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 7_000)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aRefusalIsReplayedToo(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 0)
            let body = Array(#"{"type":"card","card":{"number":"4242424242424241","expiryMonth":1,"expiryYear":2030,"cvc":"123"}}"#.utf8)
            var answers: [RunningLedger.RawAnswer] = []
            for _ in 0..<2 {
                answers.append(try await ledger.raw("POST", "/v1/instruments",
                    headers: ledger.signed("POST", "/v1/instruments", body: body, device: alice.device, idempotencyKey: "card-1"),
                    body: body))
            }
            #expect(answers.map(\.status) == [400, 400] && answers[0].body == answers[1].body)
            #expect(answers[1].headers["Idempotent-Replayed"] == ["true"])
        }
    }
}

extension SecurityTests {
    /// A copy of the database does not give card data away: the card number is nowhere in it, and the fingerprint
    /// of the request that carried it (with its CVC) is keyed, so that guesses cannot be tested against it.
    @Test(arguments: StorageKind.allCases)
    func cardDataCannotBeRecoveredFromTheDatabase(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            _ = try await ledger.customer(balance: 1_000)
            let fingerprints = try await ledger.storage.storage.read { tx in
                try tx.rows("SELECT parameters_hash FROM idempotency_keys", []).map { try $0.text(0) }
            }
            #expect(!fingerprints.isEmpty && fingerprints.allSatisfy { $0.hasPrefix("hmac-sha256:") })
            guard let path = ledger.storage.sqlitePath else { return }
            for file in [path, path + "-wal"] {
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                #expect(bytes.range(of: Data("4242424242424242".utf8)) == nil, "\(file)")
            }
        }
    }
}
