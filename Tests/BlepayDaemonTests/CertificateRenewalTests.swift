import BlepayConfiguration
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing
import TestSupport

/// The business's merchant certificate renewed through a real ledger (HTTP, SQLite): `CertificateRenewal` as the
/// business daemon builds it, over the state directory `DeviceIdentity` keeps, with the running service's
/// handshakes showing what it holds.
@Suite(.timeLimit(.minutes(2))) struct CertificateRenewalTests {
    static let day: UInt64 = 86_400_000

    /// An enrolled business restarted with a certificate the ledger's key signed `issuedDaysAgo` days ago, valid
    /// for a year from then, trusting `trusting` (by default the ledger's key), on a clock the test moves.
    struct Business {
        let configuration: DaemonConfiguration
        let identity: DeviceIdentity
        let aged: MerchantCertificate
        let presented: PresentedCertificate
        let renewal: CertificateRenewal
        let clock: MovingClock
        let log: LogRecorder

        init(_ ledger: RunningLedger, issuedDaysAgo: UInt64, trusting: [Key32]? = nil) async throws {
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .merchant, name: "Café"))
            var configuration = try await DeviceIdentityTests.configuration(.business, ledger, token: account.enrollmentToken)
            let enrolled = try await DeviceIdentityTests.prepare(configuration)
            let issued = try #require(enrolled.certificate)
            let ledgerKey = ledger.server.ledgerKey
            let validFrom = Timestamp(
                millisecondsSince1970: LedgerServer.systemClock().millisecondsSince1970 - issuedDaysAgo * CertificateRenewalTests.day)
            aged = try MerchantCertificate(
                merchantID: issued.merchantID, merchantName: issued.merchantName, signingKey: issued.signingKey,
                noiseKey: issued.noiseKey, validFrom: validFrom, validUntil: validFrom.adding(milliseconds: 365 * CertificateRenewalTests.day),
                ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
            ).signed(by: ledgerKey)
            try Self.store(aged, in: configuration.resolve("credentials.json"))
            if let trusting { configuration.ledgerPublicKeys = trusting }
            self.configuration = configuration
            identity = try await DeviceIdentityTests.prepare(configuration)
            presented = PresentedCertificate(try #require(identity.certificate))
            let clock = MovingClock()
            self.clock = clock
            log = LogRecorder()
            renewal = try CertificateRenewal(
                presenting: presented, identity: identity, configuration: configuration,
                ledger: try DeviceIdentityTests.client(configuration).with(identity.ledgerCredentials),
                trusted: TrustedLedgerKeys(configuration.ledgerPublicKeys), clock: { clock.now() }, logger: log.logger)
        }

        /// Puts `certificate` in the credentials file in place of the one there, as if the ledger had issued it.
        static func store(_ certificate: MerchantCertificate, in path: String) throws {
            var credentials = try #require(
                try JSONSerialization.jsonObject(with: Data(SecretFile.load(path))) as? [String: String])
            credentials["certificate"] = Data(certificate.encoded).base64EncodedString()
            try SecretFile.replace(path, with: Array(try JSONSerialization.data(withJSONObject: credentials)))
        }

        var noiseKey: [UInt8] { aged.noiseKey.bytes }
    }

    /// The certificate a customer's session shows, from its `connected` event.
    static func shownCertificate(_ event: TransportEvent) -> MerchantCertificate? {
        if case .connected(_, let session) = event { session.certificate } else { nil }
    }

    @Test func aCertificateNearItsExpiryIsRenewedAndTheRunningServiceShowsTheNewOneWithoutARestart() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let business = try await Business(ledger, issuedDaysAgo: 300)
            #expect(business.identity.certificate == business.aged)
            let network = InMemoryNetwork(presenting: business.presented)
            let trusted = TrustedLedgerKeys(business.configuration.ledgerPublicKeys)
            let service = BusinessService(
                links: BusinessService.Links(transport: network.business) { try await Task.sleep(for: .seconds(3600)) },
                ledger: LedgerBackend(client: try DeviceIdentityTests.client(business.configuration)
                    .with(business.identity.ledgerCredentials)),
                signer: business.identity.signingKey,
                merchant: .init(id: business.aged.merchantID, name: business.aged.merchantName), ledgerKeys: trusted,
                settings: .init(), clock: { business.clock.now() }, logger: testLogger)
            let payments = Task { await service.runPayments() }
            defer {
                payments.cancel()
                network.shutdown()
            }
            let before = Recorder(network.connectCustomer().transport.events)
            let shownBefore = try await before.first("the first customer's session", Self.shownCertificate)
            #expect(shownBefore == business.aged)

            // 300 days into a year: less than a third is left.
            guard case .renewed(let renewed) = await business.renewal.renewIfDue() else {
                Issue.record("the certificate was not renewed: \(business.log.lines)")
                return
            }
            #expect(renewed.merchantID == business.aged.merchantID && renewed.merchantName == business.aged.merchantName)
            #expect(renewed.signingKey == business.aged.signingKey && renewed.noiseKey == business.aged.noiseKey)
            #expect(renewed.validUntil.millisecondsSince1970 - renewed.validFrom.millisecondsSince1970 == 365 * Self.day)
            #expect(renewed.validFrom > business.aged.validFrom)
            #expect(business.presented.current == renewed)
            #expect(business.log.lines.first?.hasPrefix("info: merchant certificate renewed") == true)
            #expect(await business.renewal.renewIfDue() == .notDue(until: CertificateRenewal.renewalTime(of: renewed)))

            // The next customer's handshake shows the renewed certificate, which it verifies; the service, never
            // restarted, sends requests it vouches for.
            let after = Recorder(network.connectCustomer().transport.events)
            let shown = try await after.first("the second customer's session", Self.shownCertificate)
            #expect(shown == renewed)
            try shown.verify(trusting: trusted, at: business.clock.now(), noiseKey: business.noiseKey)
            let paymentID = try await service.request(amount: try Money(minorUnits: 500, currency: Currency("EUR")), reference: nil)
            let request = try await after.first("the request") { event -> PaymentRequest? in
                guard case .received(_, .paymentRequest(let request)) = event else { return nil }
                return request
            }
            #expect(request.paymentID == paymentID && request.merchantID == renewed.merchantID)
            #expect(isValidSignature(request.signature, of: request.signingBytes, by: renewed.signingKey))

            // Kept whole in the credentials file: a restart presents it too.
            let path = business.configuration.resolve("credentials.json")
            #expect(try DeviceIdentityTests.mode(path) == 0o600)
            let restarted = try await DeviceIdentityTests.prepare(business.configuration)
            #expect(restarted.certificate == renewed && restarted.credentials.deviceId == business.identity.credentials.deviceId)
            #expect(restarted.credentials.secret == business.identity.credentials.secret)
        }
    }

    /// A business stopping while it asks is not refused: it logged a warning (an error for an expired certificate),
    /// and waited out the failure it counted.
    @Test func aRenewalCutShortByShutdownIsNoFailure() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let business = try await Business(ledger, issuedDaysAgo: 300)
            let stopping = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await business.renewal.renewIfDue()
            }
            #expect(await stopping.value == .stopped)
            #expect(business.log.lines.isEmpty)
            #expect(business.presented.current == business.aged)
            guard case .renewed = await business.renewal.renewIfDue() else {
                Issue.record("the next try was not made: \(business.log.lines)")
                return
            }
        }
    }

    @Test func aBusinessWhoseCertificateExpiredStartsAndRenewsItOnceTheLedgerAnswers() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            // Issued 400 days ago: expired 35 days ago, while the ledger could not be reached. The start succeeds.
            let business = try await Business(ledger, issuedDaysAgo: 400)
            #expect(business.identity.certificate == business.aged)

            let outcome = try await ledger.down { await business.renewal.renewIfDue() }
            guard case .failed(let error, let retryAt) = outcome else {
                Issue.record("renewing with the ledger down did not fail: \(outcome)")
                return
            }
            #expect(error.code == .certificateNotRenewed && retryAt == business.clock.now().adding(milliseconds: 30_000))
            #expect(business.log.lines == [
                "error: the merchant certificate has expired and was not renewed; customers refuse it "
                    + "error=daemon.certificate-not-renewed retry_in_seconds=30"
            ])
            #expect(business.presented.current == business.aged)

            #expect(await business.renewal.renewIfDue() == .backingOff(until: retryAt))
            business.clock.advance(seconds: 30)
            guard case .renewed(let renewed) = await business.renewal.renewIfDue() else {
                Issue.record("the certificate was not renewed once the ledger was back: \(business.log.lines)")
                return
            }
            try renewed.verify(
                trusting: TrustedLedgerKeys(business.configuration.ledgerPublicKeys), at: business.clock.now(),
                noiseKey: business.noiseKey)
            #expect(business.presented.current == renewed)
        }
    }

    @Test func aCertificateSignedByALedgerKeyNotYetTrustedIsRefusedAndTheOldOneKept() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let old = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            var keyFiles = LedgerConfiguration()
            keyFiles.stateDirectory = ledger.stateDirectory
            let successor = try LedgerKeyFiles.rotate(keyFiles)
            let new = try Key32(Hex.decode(successor.publicKey, limit: 32) ?? [])
            let oldOnly = try await Business(ledger, issuedDaysAgo: 300, trusting: [old])
            let both = try await Business(ledger, issuedDaysAgo: 300, trusting: [old, new])
            _ = try LedgerKeyFiles.activate(successor.keyId, keyFiles)
            for _ in 0..<100 where try await ledger.admin.ledgerKey().keyId != successor.keyId {
                try await Task.sleep(for: .milliseconds(100))
            }

            guard case .failed(let error, _) = await oldOnly.renewal.renewIfDue() else {
                Issue.record("a certificate by an untrusted key was taken")
                return
            }
            #expect(error.code == .certificateInvalid && error.detail.contains("not trusted"))
            #expect(oldOnly.presented.current == oldOnly.aged)
            #expect(oldOnly.log.lines.first?.hasPrefix("warning: the merchant certificate was not renewed") == true)
            #expect(try await DeviceIdentityTests.prepare(oldOnly.configuration).certificate == oldOnly.aged)

            guard case .renewed(let renewed) = await both.renewal.renewIfDue() else {
                Issue.record("trusting both keys, the renewal failed: \(both.log.lines)")
                return
            }
            #expect(renewed.ledgerKeyID == TrustedLedgerKeys.keyID(of: new))
            // The old key's certificate still verifies beside it.
            try both.aged.verify(trusting: TrustedLedgerKeys([old, new]), at: both.clock.now(), noiseKey: both.noiseKey)
        }
    }
}
