import BlepayLedger
import BlepayProtocol
import Crypto
import Foundation
import Testing

@Suite struct RequestAuthenticationTests {
    let secret = SymmetricKey(data: [UInt8](repeating: 0x5C, count: 32))
    let now: Int64 = 1_795_000_000
    let body = Array(#"{"amount":2550}"#.utf8)

    func verify(
        method: String = "POST", path: String = "/v1/payments", timestamp: Int64? = nil, nonce: String? = "n-1",
        idempotencyKey: String? = "k-1", signature: String? = nil, body: [UInt8]? = nil, key: SymmetricKey? = nil,
        nonces: inout Set<String>
    ) -> RequestAuthentication.Failure.Code? {
        let timestamp = timestamp ?? now
        let signature = signature ?? RequestAuthentication.sign(
            method: "POST", path: "/v1/payments", timestamp: timestamp, nonce: nonce ?? "", idempotencyKey: "k-1",
            body: self.body, secret: key ?? secret)
        do {
            let nonce = try RequestAuthentication.verify(
                method: method, path: path, timestamp: timestamp, nonce: nonce, idempotencyKey: idempotencyKey,
                signature: signature, body: body ?? self.body, secret: secret, now: now)
            return nonces.insert(nonce).inserted ? nil : .reusedNonce
        } catch { return error.code }
    }

    @Test func aSignedFreshRequestPassesOnce() {
        var nonces = Set<String>()
        #expect(verify(nonces: &nonces) == nil)
        #expect(verify(nonces: &nonces) == .reusedNonce)
        #expect(verify(nonce: "n-2", nonces: &nonces) == nil)
    }

    @Test func anythingAlteredFailsTheMAC() {
        var nonces = Set<String>()
        #expect(verify(method: "GET", nonces: &nonces) == .badSignature)
        #expect(verify(path: "/v1/payments/other", nonces: &nonces) == .badSignature)
        #expect(verify(body: Array(#"{"amount":9999}"#.utf8), nonces: &nonces) == .badSignature)
        // Sent again under another key, one intended request would count twice: the key is covered too.
        #expect(verify(idempotencyKey: "k-2", nonces: &nonces) == .badSignature)
        #expect(verify(idempotencyKey: nil, nonces: &nonces) == .badSignature)
        #expect(verify(key: SymmetricKey(data: [UInt8](repeating: 1, count: 32)), nonces: &nonces) == .badSignature)
        #expect(verify(signature: String(repeating: "0", count: 64), nonces: &nonces) == .badSignature)
        // A failed request does not spend its nonce.
        #expect(nonces.count == 0)
    }

    @Test func staleOrIncompleteRequestsAreRefused() {
        var nonces = Set<String>()
        #expect(verify(timestamp: now - 301, nonces: &nonces) == .staleTimestamp)
        #expect(verify(timestamp: now + 301, nonces: &nonces) == .staleTimestamp)
        #expect(verify(timestamp: now - 300, nonces: &nonces) == nil)
        #expect(verify(timestamp: .min, nonces: &nonces) == .staleTimestamp)
        #expect(verify(timestamp: .max, nonces: &nonces) == .staleTimestamp)
        #expect(verify(nonce: nil, nonces: &nonces) == .missingHeader)
        #expect(verify(nonce: String(repeating: "x", count: 65), nonces: &nonces) == .missingHeader)
        #expect(verify(signature: "not hex", nonces: &nonces) == .missingHeader)
    }

    @Test func theCanonicalFormIsStable() {
        // Pinned so that a client in another language can check its signer against it.
        let canonical = RequestAuthentication.canonical(
            method: "post", path: "/v1/payments", timestamp: 1, nonce: "n", idempotencyKey: "k", body: [])
        #expect(String(decoding: canonical, as: UTF8.self) == """
            blepay-ledger/2
            POST
            /v1/payments
            1
            n
            k
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
    }
}

@Suite struct IdempotencyTests {
    let key = IdempotencyRecord.fingerprintKey(from: SigningKey())

    func decide(_ stored: IdempotencyRecord?, _ body: String) -> IdempotencyRecord.Decision {
        let hash = IdempotencyRecord.parametersHash(method: "POST", path: "/v1/payments", body: Array(body.utf8), key: key)
        return IdempotencyRecord.decide(
            stored: stored, parametersHash: hash, method: "POST", path: "/v1/payments", body: Array(body.utf8))
    }

    @Test func theSameKeyReplaysAndOtherParametersConflict() throws {
        let hash = IdempotencyRecord.parametersHash(method: "POST", path: "/v1/payments", body: Array("a".utf8), key: key)
        #expect(decide(nil, "a") == .execute)
        let stored = IdempotencyRecord(key: "k-1", parametersHash: hash, status: 201, response: Array("{}".utf8))
        #expect(decide(stored, "a") == .replay(status: 201, response: Array("{}".utf8)))
        #expect(decide(stored, "b") == .conflict)
        #expect(IdempotencyRecord.parametersHash(method: "post", path: "/v1/payments", body: Array("a".utf8), key: key) == hash)
    }

    /// Whoever copies the database cannot test guesses of what a request carried: without the ledger's key the
    /// fingerprint of a guess does not match. A record kept before fingerprints were keyed still answers its retry.
    @Test func theFingerprintIsKeyedAndOlderPlainOnesStillReplay() throws {
        let body = #"{"type":"card","card":{"number":"4242424242424242","cvc":"123"}}"#
        let hash = IdempotencyRecord.parametersHash(method: "POST", path: "/v1/payments", body: Array(body.utf8), key: key)
        let plain = SHA256.hash(data: Array("POST /v1/payments\n\(body)".utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(hash.hasPrefix("hmac-sha256:") && !hash.contains(plain))
        let other = IdempotencyRecord.fingerprintKey(from: SigningKey())
        #expect(IdempotencyRecord.parametersHash(method: "POST", path: "/v1/payments", body: Array(body.utf8), key: other) != hash)
        let old = IdempotencyRecord(key: "k-1", parametersHash: plain, status: 201, response: Array("{}".utf8))
        #expect(decide(old, body) == .replay(status: 201, response: Array("{}".utf8)))
        #expect(decide(old, body + " ") == .conflict)
    }

    @Test func keysAreOneTo255PrintableCharacters() throws {
        #expect(try IdempotencyRecord.validate("order-123/attempt") == "order-123/attempt")
        #expect(throws: IdempotencyRecord.KeyError.missing) { try IdempotencyRecord.validate(nil) }
        #expect(throws: IdempotencyRecord.KeyError.missing) { try IdempotencyRecord.validate("") }
        #expect(throws: IdempotencyRecord.KeyError.tooLong) { try IdempotencyRecord.validate(String(repeating: "k", count: 256)) }
        #expect(throws: IdempotencyRecord.KeyError.invalidCharacters) { try IdempotencyRecord.validate("with space") }
    }
}

@Suite struct PaymentResourceTests {
    /// A payment as a ledger from before refunds answered it, without `refunded`, reads as none refunded; the field
    /// travels when present.
    @Test func refundedIsZeroWhenAbsentAndKeptWhenPresent() throws {
        let old = #"{"amount":500,"currency":"EUR","expiresAt":1,"history":[],"id":"ab","merchantId":"acc_1","status":"settled","tip":0}"#
        let payment = try JSONDecoder().decode(PaymentResource.self, from: Data(old.utf8))
        #expect(payment.refunded == 0 && payment.amount == 500 && payment.receipt == nil)
        let refunded = PaymentResource(id: "ab", status: .settled, amount: 500, tip: 0, currency: "EUR", reference: nil,
            merchantId: "acc_1", instrumentId: nil, failureReason: nil, expiresAt: 1, history: [], receipt: nil, refunded: 200)
        #expect(try JSONDecoder().decode(PaymentResource.self, from: JSONEncoder().encode(refunded)) == refunded)
    }
}
