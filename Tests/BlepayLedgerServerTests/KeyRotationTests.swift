import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// The ledger's signing key rotated while it runs, as `blepay-ledger rotate-key` and `activate-key` do it: the
/// successor is published at once and signs only once activated; what the old key signed keeps verifying, at the
/// ledger itself too; idempotency records made before the rotation are still answered.
@Suite(.timeLimit(.minutes(2))) struct KeyRotationTests {
    /// The running ledger's configuration, as the CLI reads it for the same state directory.
    static func configuration(_ ledger: RunningLedger) -> LedgerConfiguration {
        var configuration = LedgerConfiguration()
        configuration.stateDirectory = ledger.stateDirectory
        return configuration
    }

    /// The keys `GET /v1/ledger-keys` lists once `condition` holds (the running ledger reloads its key files).
    static func published(_ ledger: RunningLedger, _ condition: ([LedgerKeyResource]) -> Bool) async throws
        -> [LedgerKeyResource]
    {
        for _ in 0..<100 {
            let keys = try await ledger.admin.ledgerKeys()
            if condition(keys) { return keys }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CancellationError()
    }

    static func key(_ resource: LedgerKeyResource) throws -> Key32 { try Key32(Hex.decode(resource.publicKey, limit: 32) ?? []) }

    @Test func aSuccessorIsPublishedAtOnceSignsOnceActivatedAndTheOldKeysSignaturesStillVerify() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let configuration = Self.configuration(ledger)
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let old = try await ledger.admin.ledgerKey()
            let enrolled = try MerchantCertificate(encoded: [UInt8](Data(base64Encoded: try #require(cafe.device.certificate))!))
            let oldVoucher = try await TestVoucher(ledger, alice, limit: 3_000)
            #expect(oldVoucher.voucher.ledgerKeyID.bytes.hex == old.keyId)
            let account = Array(try JSONEncoder().encode(CreateAccount(kind: .customer, name: "Bob")))
            func createBob() async throws -> RunningLedger.RawAnswer {
                try await ledger.raw("POST", "/v1/accounts", headers: [
                    ("Authorization", "Bearer \(try LedgerServer.adminToken(configuration))"), ("Idempotency-Key", "bob"),
                ], body: account)
            }
            let bob = try await createBob()
            #expect(bob.status == 201)

            // Published at once, beside the active key, which still signs.
            let successor = try LedgerKeyFiles.rotate(configuration)
            #expect(successor.status == "next" && successor.keyId != old.keyId)
            let listed = try await Self.published(ledger) { $0.count == 2 }
            #expect(listed == [LedgerKeyResource(keyId: old.keyId, publicKey: old.publicKey, status: "active"), successor])
            #expect(try await ledger.admin.ledgerKey() == old)
            #expect(try await cafe.client.renewCertificate().ledgerKeyID.bytes.hex == old.keyId)

            _ = try LedgerKeyFiles.activate(successor.keyId, configuration)
            let rotated = try await Self.published(ledger) { $0.last?.status == "active" }
            #expect(rotated.map(\.status) == ["retired", "active"])
            #expect(try await ledger.admin.ledgerKey() == LedgerKeyResource(keyId: successor.keyId, publicKey: successor.publicKey))

            // New certificates and vouchers are signed by the successor, for the same merchant and keys.
            let renewed = try await cafe.client.renewCertificate()
            #expect(renewed.ledgerKeyID.bytes.hex == successor.keyId)
            #expect(renewed.merchantID == enrolled.merchantID && renewed.merchantName == enrolled.merchantName)
            #expect(renewed.signingKey == enrolled.signingKey && renewed.noiseKey == enrolled.noiseKey)
            let newVoucher = try await TestVoucher(ledger, alice, limit: 2_000)
            #expect(newVoucher.voucher.ledgerKeyID.bytes.hex == successor.keyId)

            // The ledger still settles under the voucher its old key signed; the receipt is the new key's.
            let (request, acceptance) = try oldVoucher.pay(
                try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let results = try await cafe.client.settle([(request, acceptance)], operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled])
            let receipt = try Receipt(encoded: [UInt8](Data(base64Encoded: try #require(results.results[0].receipt))!))
            #expect(receipt.ledgerKeyID?.bytes.hex == successor.keyId)

            // Trusting both keys, what either signed verifies; trusting the old one only, the new signatures do not.
            let now = LedgerServer.systemClock()
            let both = TrustedLedgerKeys([try Self.key(old), try Self.key(successor)])
            try enrolled.verify(trusting: both, at: now, noiseKey: enrolled.noiseKey.bytes)
            try renewed.verify(trusting: both, at: now, noiseKey: renewed.noiseKey.bytes)
            #expect(receipt.isSigned(trusting: both))
            let oldOnly = TrustedLedgerKeys([try Self.key(old)])
            try enrolled.verify(trusting: oldOnly, at: now, noiseKey: enrolled.noiseKey.bytes)
            #expect(throws: ProtocolError.self) { try renewed.verify(trusting: oldOnly, at: now, noiseKey: renewed.noiseKey.bytes) }
            #expect(!receipt.isSigned(trusting: oldOnly))

            // Idempotency fingerprints come from the first key: a request made before the rotation is replayed.
            let replayed = try await createBob()
            let first = try JSONDecoder().decode(AccountResource.self, from: Data(bob.body))
            let again = try JSONDecoder().decode(AccountResource.self, from: Data(replayed.body))
            // The same account, its token withheld from the replay.
            #expect(replayed.status == 201 && again.id == first.id && again.enrollmentToken == nil
                && again.enrollmentTokenWithheld == true)
            #expect(replayed.headers["Idempotent-Replayed"].first == "true")
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test func onlyABusinessDeviceRenewsACertificate() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let alice = try await ledger.customer(balance: 0)
            await #expect(throws: LedgerClientError.self) { try await alice.client.renewCertificate() }
            let body = Array("{}".utf8)
            let anonymous = try await ledger.raw("POST", "/v1/device/certificate",
                headers: [("Idempotency-Key", "k1"), ("Content-Type", "application/json")], body: body)
            #expect(anonymous.status == 401)
            let customer = try await ledger.raw("POST", "/v1/device/certificate",
                headers: ledger.signed("POST", "/v1/device/certificate", body: body, device: alice.device), body: body)
            #expect(customer.status == 403 && customer.error?.code == "auth.forbidden")
        }
    }
}
