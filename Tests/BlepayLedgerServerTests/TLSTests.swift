import BlepayConfiguration
import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import Crypto
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// The ledger over HTTPS, and the client that only believes the certificate it was told to.
@Suite struct TLSTests {
    /// Runs `body` with a CA, a certificate it issued, and the ledger serving that certificate.
    func withHTTPSLedger(_ body: (RunningLedger, TestCertificateAuthority, TestCertificateAuthority.Issued) async throws -> Void)
        async throws
    {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let certificate = try authority.issue()
        try await RunningLedger.with(.sqlite, tls: (authority, certificate)) { ledger in
            try await body(ledger, authority, certificate)
        }
    }

    /// `ledger`'s key as a client trusting `trust` gets it, or the error code it gets instead.
    func ledgerKey(_ ledger: RunningLedger, _ trust: LedgerTrust) async -> String {
        let client = LedgerClient(baseURL: ledger.baseURL, credentials: .none, retry: .init(attempts: 3, firstDelay: .milliseconds(10)),
            trust: trust, logger: testLogger)
        do { return try await client.ledgerKey().publicKey } catch { return error.code }
    }

    @Test func enrollmentCardsAndPaymentsGoThroughHTTPSWithTheConfiguredCA() async throws {
        try await withHTTPSLedger { ledger, _, _ in
            #expect(ledger.baseURL.hasPrefix("https://"))
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let request = try ledger.request(by: cafe, amount: 1_200)
            #expect(try await cafe.client.createPayment(request).status == .authorizationRequired)
            let paid = try await cafe.client.accept(try ledger.acceptance(of: request, by: alice), request: request)
            #expect(paid.status == .settled)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 8_800)
        }
    }

    @Test func aCertificateFromAnotherCAIsRefused() async throws {
        try await withHTTPSLedger { ledger, _, _ in
            let other = try TestCertificateAuthority(name: "someone in the middle")
            defer { other.remove() }
            // Refused at once: the same certificate would be met again.
            let start = ContinuousClock.now
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: other.caFile)) == "ledger.tls-failed")
            #expect(ContinuousClock.now - start < .seconds(5))
            // Nor does the system's trust store know a private CA.
            #expect(await ledgerKey(ledger, LedgerTrust()) == "ledger.tls-failed")
            let refusal = LedgerClientError.tlsFailed("x")
            #expect(refusal.paymentError.code == .ledgerOffline)
        }
    }

    @Test func onlyThePinnedKeyIsTakenEvenWithATrustedChain() async throws {
        try await withHTTPSLedger { ledger, authority, certificate in
            // Same CA, other key: the chain is valid, the key is not the pinned one.
            let sibling = try authority.issue("sibling")
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: sibling.pin)) == "ledger.tls-failed")
            let key = await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: certificate.pin))
            #expect(key == ledger.server.ledgerKey.publicKey.bytes.hex)
        }
    }

    /// A caller that gives up (a daemon stopping) closes the connection its request went out on. The request was
    /// sent again on a new connection, as one whose kept connection the ledger closed is, after its caller had gone.
    @Test func aCancelledRequestIsNotSentAgain() async throws {
        try await withHTTPSLedger { ledger, _, _ in
            let cafe = try await ledger.merchant()
            let request = try ledger.request(by: cafe, amount: 1_200)
            #expect(try await cafe.client.createPayment(request).status == .authorizationRequired)
            let opened = cafe.client.connectionsOpened
            // A status read the ledger holds for its whole wait, on the connection kept from the creation.
            let held = Task { try await cafe.client.payment(request.paymentID, waitingWhile: .authorizationRequired) }
            try await Task.sleep(for: .milliseconds(500))
            held.cancel()
            await #expect(throws: (any Error).self) { try await held.value }
            try await Task.sleep(for: .milliseconds(500))
            #expect(cafe.client.connectionsOpened == opened)
        }
    }

    /// Each request paid a TCP and TLS handshake of its own (a daemon's every probe and payment did): now the client
    /// keeps its connection, and a connection the ledger closed, as idle or as it restarts, is replaced unnoticed.
    @Test func requestsShareOneConnectionUntilTheLedgerClosesIt() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let ledger = try await RunningLedger.start(.sqlite, tls: (authority, try authority.issue()),
            configure: { $0.idleTimeoutSeconds = 2 })
        do {
            // One attempt per call: a kept connection that failed a call would show.
            let client = ledger.admin
            #expect(client.connectionsOpened == 0)
            let key = try await client.ledgerKey().publicKey
            let account = try await client.createAccount(CreateAccount(kind: .merchant, name: "Café"))
            #expect(try await client.account(account.id).name == "Café")
            #expect(try await client.once(timeoutSeconds: 3).ledgerKey().publicKey == key)
            #expect(client.connectionsOpened == 1)

            try await Task.sleep(for: .seconds(3))  // past the ledger's idle timeout: it closed the connection
            #expect(try await client.ledgerKey().publicKey == key)
            #expect(client.connectionsOpened == 2)

            try await ledger.down {}
            #expect(try await client.ledgerKey().publicKey == key)
            #expect(client.connectionsOpened == 3)
        } catch {
            try await ledger.stop()
            throw error
        }
        try await ledger.stop()
    }

    @Test func aRenewedCertificateIsServedToNewConnectionsWithoutARestart() async throws {
        try await withHTTPSLedger { ledger, authority, certificate in
            let key = ledger.server.ledgerKey.publicKey.bytes.hex
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: certificate.pin)) == key)
            let renewed = try authority.issue()  // over the same files
            #expect(renewed.serial != certificate.serial && renewed.pin != certificate.pin)
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: renewed.pin)) == key)
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: certificate.pin)) == "ledger.tls-failed")

            // A renewal that is not a certificate keeps the one in use.
            try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: renewed.certificateFile))
            #expect(await ledgerKey(ledger, LedgerTrust(caFile: authority.caFile, pin: renewed.pin)) == key)
        }
    }

    @Test func anHTTPSLedgerNothingListensAtIsUnavailableAfterTheRetries() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        // The connection is refused before TLS starts: a failure to reach the ledger, retried, not a TLS refusal.
        let client = LedgerClient(baseURL: "https://127.0.0.1:9", credentials: .none,
            retry: .init(attempts: 2, firstDelay: .milliseconds(10), timeout: .seconds(2)),
            trust: LedgerTrust(caFile: authority.caFile), logger: testLogger)
        do {
            _ = try await client.ledgerKey()
            Issue.record("reached a closed port")
        } catch {
            #expect(error.code == "ledger.unavailable")
        }
    }

    @Test func anHTTPSLedgerWhoseNameDoesNotResolveIsUnavailable() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        // `.invalid` never resolves (RFC 6761): no connection is ever made, and the request fails rather than hangs.
        let client = LedgerClient(baseURL: "https://ledger.invalid:8480", credentials: .none,
            retry: .init(attempts: 1, timeout: .seconds(5)), trust: LedgerTrust(caFile: authority.caFile), logger: testLogger)
        do {
            _ = try await client.ledgerKey()
            Issue.record("reached a name that does not resolve")
        } catch {
            #expect(error.code == "ledger.unavailable")
        }
        #expect(client.connectionsOpened == 0)
    }

    @Test func aLedgerThatNeverAnswersTheHandshakeTimesOutAsUnavailable() async throws {
        // A socket that listens but never accepts: the kernel completes the connection, nobody answers TLS.
        let listener = try SilentListener()
        defer { listener.close() }
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let client = LedgerClient(baseURL: "https://127.0.0.1:\(listener.port)", credentials: .none,
            retry: .init(attempts: 1, timeout: .milliseconds(300)), trust: LedgerTrust(caFile: authority.caFile),
            logger: testLogger)
        await #expect(throws: LedgerClientError.unavailable("GET /v1/ledger-key: no answer within 300 ms")) {
            try await client.ledgerKey()
        }
    }

    @Test func cardsAndTokensAreNeverSentInClearToAnotherHost() async throws {
        // 192.0.2.1 (TEST-NET-1) answers nothing: a request that were sent would end as unavailable, not refused.
        let remote = "http://192.0.2.1:8480"
        let enrollment = LedgerClient(baseURL: remote, credentials: .bearer("token"), retry: .init(attempts: 1),
            logger: testLogger)
        await #expect(throws: LedgerClientError.insecureTransport("GET /v1/ledger-key to 192.0.2.1 over plain HTTP")) {
            try await enrollment.ledgerKey()
        }
        let device = LedgerClient(baseURL: remote, credentials: .device(id: "d", secret: .init(size: .bits256)),
            retry: .init(attempts: 1), logger: testLogger)
        do {
            _ = try await device.addInstrument(CreateInstrument(card: .init(number: "4242424242424242", expiryMonth: 12,
                expiryYear: 2040, cvc: "123")))
            Issue.record("a card was sent in clear")
        } catch {
            #expect(error.code == "ledger.insecure-transport")
        }
    }

    @Test func theTLSFilesMustBeUsable() async throws {
        var configuration = try LedgerConfiguration.parse("""
            [server]
            port = 0
            [tls]
            certificate_file = "tls/ledger.crt"
            key_file = "tls/ledger.key"
            """, file: "ledger.toml")
        configuration.stateDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("blepay-ledger-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: configuration.stateDirectory) }
        let storage = try await makeStorage(.sqlite)
        let server = try LedgerServer(configuration: configuration, storage: storage.storage, logger: testLogger)
        do {
            _ = try server.application(configurationFile: "ledger.toml", logger: testLogger)
            Issue.record("served without a certificate")
        } catch let error as ConfigurationError {
            #expect(error.file == "ledger.toml" && error.key == "tls.certificate_file")
            #expect(error.reason.contains(configuration.resolve("tls/ledger.crt")))
        }
        // A certificate with no key beside it.
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let issued = try authority.issue()
        configuration.tlsCertificateFile = issued.certificateFile
        let other = try LedgerServer(configuration: configuration, storage: storage.storage, logger: testLogger)
        do {
            _ = try other.application(configurationFile: "ledger.toml", logger: testLogger)
            Issue.record("served without a key")
        } catch let error as ConfigurationError {
            #expect(error.key == "tls.key_file" && error.reason.contains(configuration.resolve("tls/ledger.key")))
        }
        // Another certificate's key.
        configuration.tlsKeyFile = try authority.issue("other").keyFile
        let mismatched = try LedgerServer(configuration: configuration, storage: storage.storage, logger: testLogger)
        do {
            _ = try mismatched.application(configurationFile: "ledger.toml", logger: testLogger)
            Issue.record("served with a key that is not the certificate's")
        } catch let error as ConfigurationError {
            #expect(error.key == "tls.key_file" && error.reason.contains("is not the key of the certificate"))
        }
        try await storage.destroy()
    }
}
