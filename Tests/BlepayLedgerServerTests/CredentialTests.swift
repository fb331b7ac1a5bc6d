import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import Foundation
import LedgerTestSupport
import Testing

/// Credentials with a lifecycle, over HTTP on both databases: an enrollment token enrolls one device until it
/// expires and is never handed out twice; the operator lists accounts and devices, revokes a device for good and
/// blocks an account until unblocked, and the signed deny list carries the keys offline sides must refuse.
@Suite struct CredentialTests {
    /// "401 device.revoked" for a refused call, "ok" for an answered one.
    static func outcome<T>(_ call: () async throws -> T) async -> String {
        do {
            _ = try await call()
            return "ok"
        } catch let error as LedgerClientError {
            guard case .refused(let status, let detail) = error else { return error.code }
            return "\(status) \(detail.code)"
        } catch {
            return "\(error)"
        }
    }

    static func adminToken(_ ledger: RunningLedger) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: ledger.stateDirectory + "/admin.token")), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func enrollment(_ name: String, key: SigningKey = SigningKey()) throws -> [UInt8] {
        try LedgerClient.encode(RegisterDevice(name: name, signingKey: key.publicKey.bytes.hex, noiseKey: nil))
    }

    static func enroll(_ ledger: RunningLedger, token: String, body: [UInt8], key: String) async throws -> RunningLedger.RawAnswer {
        try await ledger.raw("POST", "/v1/devices", headers: [("Authorization", "Bearer \(token)"), ("Idempotency-Key", key)],
            body: body)
    }

    @Test(arguments: StorageKind.allCases)
    func anEnrollmentTokenEnrollsOneDeviceAndOnlyReplaysThatEnrollment(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Alice"))
            let token = try #require(account.enrollmentToken)
            let expiresAt = try #require(account.enrollmentTokenExpiresAt)
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            #expect(expiresAt > now + 71 * 3_600_000 && expiresAt <= now + 72 * 3_600_000, "72 hours by default")

            let phone = try Self.enrollment("phone")
            let first = try await Self.enroll(ledger, token: token, body: phone, key: "enroll-1")
            #expect(first.status == 201)
            // The same enrollment again (an answer lost): the same device and secret, from the sealed record.
            let replayed = try await Self.enroll(ledger, token: token, body: phone, key: "enroll-1")
            #expect(replayed.status == 201 && replayed.body == first.body && replayed.headers["Idempotent-Replayed"] == ["true"])
            // Any other enrollment with the used token is refused, and enrolls nothing.
            let second = try await Self.enroll(ledger, token: token, body: try Self.enrollment("tablet"), key: "enroll-2")
            #expect(second.status == 401 && second.error?.code == "auth.enrollment-token-used")
            #expect(try await ledger.admin.devices(of: account.id).map(\.name) == ["phone"])

            // The operator issues a fresh token; it enrolls the next device, once.
            let fresh = try await ledger.admin.issueEnrollmentToken(for: account.id)
            let tablet = try await Self.enroll(ledger, token: try #require(fresh.token), body: try Self.enrollment("tablet"), key: "enroll-3")
            #expect(tablet.status == 201)
            let third = try await Self.enroll(ledger, token: try #require(fresh.token), body: try Self.enrollment("watch"), key: "enroll-4")
            #expect(third.error?.code == "auth.enrollment-token-used")
            #expect(try await ledger.admin.devices(of: account.id).map(\.name) == ["phone", "tablet"])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anExpiredEnrollmentTokenIsRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Alice"))
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE enrollment_tokens SET expires_at = ?", [.integer(Int64(Date().timeIntervalSince1970 * 1000) - 1)])
            }
            let late = try await Self.enroll(ledger, token: try #require(account.enrollmentToken), body: try Self.enrollment("phone"),
                key: "enroll-1")
            #expect(late.status == 401 && late.error?.code == "auth.enrollment-token-expired")
            #expect(try await ledger.admin.devices(of: account.id).isEmpty)
        }
    }

    /// The operator's answer carrying a token is kept without it: a replay (the same Idempotency-Key) says the token
    /// is withheld, and nothing in it enrolls a device; the first token still does.
    @Test(arguments: StorageKind.allCases)
    func aReplayedAccountCreationOrTokenIssueHandsOutNoToken(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let admin = [("Authorization", "Bearer \(try Self.adminToken(ledger))"), ("Idempotency-Key", "acct-1")]
            let body = Array(#"{"kind":"merchant","name":"Corner Cafe"}"#.utf8)
            let first = try await ledger.raw("POST", "/v1/accounts", headers: admin, body: body)
            let again = try await ledger.raw("POST", "/v1/accounts", headers: admin, body: body)
            #expect(first.status == 201 && again.status == 201 && again.headers["Idempotent-Replayed"] == ["true"])
            let created = try JSONDecoder().decode(AccountResource.self, from: Data(first.body))
            let replayed = try JSONDecoder().decode(AccountResource.self, from: Data(again.body))
            #expect(created.enrollmentToken != nil && created.enrollmentTokenWithheld == nil)
            #expect(replayed.id == created.id && replayed.enrollmentToken == nil && replayed.enrollmentTokenWithheld == true)
            #expect(replayed.enrollmentTokenExpiresAt == created.enrollmentTokenExpiresAt)

            let path = "/v1/accounts/\(created.id)/enrollment-tokens"
            let issueHeaders = [admin[0], ("Idempotency-Key", "token-1")]
            let issued = try await ledger.raw("POST", path, headers: issueHeaders)
            let reissued = try await ledger.raw("POST", path, headers: issueHeaders)
            let issuedToken = try JSONDecoder().decode(EnrollmentTokenResource.self, from: Data(issued.body))
            let replayedToken = try JSONDecoder().decode(EnrollmentTokenResource.self, from: Data(reissued.body))
            #expect(issued.status == 201 && issuedToken.token != nil)
            #expect(reissued.status == 201 && replayedToken.token == nil && replayedToken.withheld == true)

            // No string in either replay enrolls.
            for answer in [again, reissued] {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
                for case let value as String in object.values {
                    let tried = try await Self.enroll(ledger, token: value, body: try Self.enrollment("till"), key: "try-\(value)")
                    #expect(tried.status == 401, "\(value)")
                }
            }
            let till = try await Self.enroll(ledger, token: try #require(created.enrollmentToken),
                body: try LedgerClient.encode(RegisterDevice(name: "till", signingKey: SigningKey().publicKey.bytes.hex,
                    noiseKey: String(repeating: "22", count: 32))), key: "till-1")
            #expect(till.status == 201)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aRevokedDeviceIsRefusedForGoodAndItsKeyIsOnTheSignedDenyList(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 1_000)
            let acceptance = try ledger.acceptance(of: request, by: alice)
            #expect(try await cafe.client.denyList().blockedKeys.isEmpty)

            let revoked = try await ledger.admin.revoke(device: alice.device.id)
            #expect(revoked.revokedAt != nil && revoked.signingKey == alice.key.publicKey.bytes.hex)
            #expect(await Self.outcome { try await alice.client.ownAccount() } == "401 device.revoked")
            #expect(await Self.outcome { try await alice.client.accept(acceptance, request: request) } == "401 device.revoked")
            // The business forwarding an acceptance the revoked key signed gets it refused too.
            #expect(await Self.outcome { try await cafe.client.accept(acceptance, request: request) } != "ok")

            let list = try await cafe.client.denyList()
            #expect(list.denies(key: alice.key.publicKey))
            #expect(isValidSignature(list.signature, of: list.signingBytes, by: ledger.server.ledgerKey.publicKey))
            // Revoking again changes nothing; there is no way back.
            #expect(try await ledger.admin.revoke(device: alice.device.id) == revoked)
            #expect(await Self.outcome { try await ledger.admin.revoke(device: "dev_unknown") } == "404 not-found")
            #expect(try await ledger.admin.account(alice.account.id).balances.first?.posted == 10_000)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aBlockedAccountIsRefusedUntilUnblocked(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 1_000)
            let blocked = try await ledger.admin.block(account: alice.account.id)
            #expect(blocked.blocked)
            #expect(await Self.outcome { try await alice.client.ownAccount() } == "403 account.blocked")
            #expect(await Self.outcome { try await alice.client.instruments() } == "403 account.blocked")
            // A new device of a blocked account is refused too, and the token stays unused.
            let fresh = try #require(try await ledger.admin.issueEnrollmentToken(for: alice.account.id).token)
            let refused = try await Self.enroll(ledger, token: fresh, body: try Self.enrollment("tablet"), key: "enroll-1")
            #expect(refused.status == 403 && refused.error?.code == "account.blocked")

            #expect(try await ledger.admin.block(account: alice.account.id, false).blocked == false)
            #expect(try await alice.client.ownAccount().id == alice.account.id)
            #expect(try await Self.enroll(ledger, token: fresh, body: try Self.enrollment("tablet"), key: "enroll-2").status == 201)
            #expect(await Self.outcome { try await ledger.admin.block(account: "acc_unknown") } == "404 not-found")
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aBlockedMerchantCannotCreatePaymentsNorBePaidAndItsTillsAreDenied(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let open = try ledger.request(by: cafe, amount: 1_000)
            _ = try await cafe.client.createPayment(open)

            _ = try await ledger.admin.block(account: cafe.account.id)
            let later = try ledger.request(by: cafe, amount: 500)
            #expect(await Self.outcome { try await cafe.client.createPayment(later) } == "403 account.blocked")
            let acceptance = try ledger.acceptance(of: open, by: alice)
            #expect(await Self.outcome { try await alice.client.accept(acceptance, request: open) } == "403 account.blocked")
            #expect(try await alice.client.denyList().denies(key: cafe.key.publicKey))
            #expect(try await ledger.admin.account(alice.account.id).balances.first?.posted == 10_000)

            _ = try await ledger.admin.block(account: cafe.account.id, false)
            #expect(try await alice.client.denyList().denies(key: cafe.key.publicKey) == false)
            #expect(try await alice.client.accept(acceptance, request: open).status == .settled)
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theOperatorListsAccountsPageByPageAndAnAccountsDevices(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            var customers: [String] = []
            for _ in 0..<3 { customers.append(try await ledger.customer(balance: 0).account.id) }
            let cafe = try await ledger.merchant()

            let first = try await ledger.admin.accounts(kind: .customer, limit: 2)
            #expect(first.accounts.count == 2 && first.next == first.accounts.last?.id)
            let rest = try await ledger.admin.accounts(kind: .customer, limit: 2, after: first.next)
            #expect(rest.next == nil)
            #expect((first.accounts + rest.accounts).map(\.id) == customers.sorted())
            #expect(try await ledger.admin.accounts(kind: .merchant).accounts.map(\.id) == [cafe.account.id])
            #expect(try await ledger.admin.accounts().accounts.count == 4)
            #expect(await Self.outcome { try await ledger.admin.accounts(limit: 0) } == "400 validation.failed")

            let devices = try await ledger.admin.devices(of: cafe.account.id)
            #expect(devices == [EnrolledDevice(id: cafe.device.id, accountId: cafe.account.id, name: "till",
                signingKey: cafe.key.publicKey.bytes.hex, business: true, createdAt: devices[0].createdAt, revokedAt: nil)])
            #expect(await Self.outcome { try await ledger.admin.devices(of: "acc_unknown") } == "404 not-found")
            // The operator's routes are the operator's.
            #expect(await Self.outcome { try await cafe.client.accounts() } == "401 auth.unauthenticated")
            #expect(await Self.outcome { try await cafe.client.revoke(device: cafe.device.id) } == "401 auth.unauthenticated")
        }
    }
}
