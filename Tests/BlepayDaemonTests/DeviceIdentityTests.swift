import BlepayConfiguration
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Keys created once, enrollment with a real ledger (over HTTP, on SQLite), and what goes wrong on the way.
@Suite struct DeviceIdentityTests {
    /// A daemon configuration for `ledger` in a fresh state directory, with the account's token in place.
    static func configuration(
        _ role: DaemonConfiguration.Role, _ ledger: RunningLedger, token: String?, tokenMode: Int = 0o600
    ) async throws -> DaemonConfiguration {
        var configuration = DaemonConfiguration(role: role)
        configuration.stateDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("blepay-daemon-\(UUID().uuidString)").path
        configuration.ledgerURL = ledger.baseURL
        configuration.ledgerPublicKeys = [try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])]
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true)
        if let token {
            #expect(FileManager.default.createFile(
                atPath: configuration.resolve(configuration.enrollmentTokenFile), contents: Data(token.utf8),
                attributes: [.posixPermissions: tokenMode]))
        }
        return configuration
    }

    static func client(_ configuration: DaemonConfiguration) throws -> LedgerClient {
        LedgerClient(
            baseURL: configuration.ledgerURL, credentials: .none,
            keys: try IdempotencyKeyStore(directory: configuration.resolve("idempotency")),
            retry: .init(attempts: 1), logger: testLogger)
    }

    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1) & 0o777
    }

    static func prepare(_ configuration: DaemonConfiguration) async throws(DaemonError) -> DeviceIdentity {
        try await DeviceIdentity.prepare(
            configuration, ledger: try! client(configuration))
    }

    /// Why preparing fails, or nil if it did not.
    static func failure(_ configuration: DaemonConfiguration) async -> DaemonError? {
        do throws(DaemonError) {
            _ = try await prepare(configuration)
            return nil
        } catch {
            return error
        }
    }

    @Test func aCustomerEnrollsOnceAndKeepsItsKeys() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Alice"))
            let configuration = try await Self.configuration(.customer, ledger, token: account.enrollmentToken)
            let first = try await Self.prepare(configuration)
            #expect(first.credentials.accountId == account.id && first.noiseKey == nil && first.certificate == nil)
            for file in ["device-signing.key", "credentials.json"] {
                #expect(try Self.mode(configuration.resolve(file)) == 0o600, "\(file)")
            }
            #expect(try Self.mode(configuration.stateDirectory) == 0o700)
            // Descriptions, which logs may carry, never show the request secret.
            for text in [
                "\(first)", String(reflecting: first), "\(first.credentials)", String(reflecting: first.credentials),
                "\([first])", String(describing: Optional(first)),
            ] {
                #expect(text.contains(first.credentials.deviceId) && !text.contains(first.credentials.secret), "\(text)")
            }

            // Once enrolled, the token is spent and its file gone; the same device comes back.
            #expect(!FileManager.default.fileExists(atPath: configuration.resolve(configuration.enrollmentTokenFile)))
            let again = try await Self.prepare(configuration)
            #expect(again.credentials == first.credentials)
            #expect(again.signingKey.publicKey == first.signingKey.publicKey)

            let own = try await Self.client(configuration).with(again.ledgerCredentials).ownAccount()
            #expect(own.id == account.id)
        }
    }

    /// The daemon stopped after the ledger enrolled it but before it stored the credentials: the retry, with the same
    /// idempotency key, is answered with the device the first attempt created, secret included.
    @Test func anEnrollmentInterruptedBeforeItsCredentialsWereStoredIsAnsweredWithTheSameDevice() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Alice"))
            let configuration = try await Self.configuration(.customer, ledger, token: account.enrollmentToken)
            // The first start: its key created, its enrollment sent as the daemon sends it, the answer lost.
            let key = try SigningKey(seed: SecretFile.loadOrCreate(configuration.resolve("device-signing.key")) {
                SigningKey().seed
            })
            let request = RegisterDevice(name: configuration.deviceName, signingKey: key.publicKey.bytes.hex, noiseKey: nil)
            let lost = try await Self.client(configuration).with(.bearer(account.enrollmentToken ?? "")).enroll(request)

            let again = try await Self.prepare(configuration)
            #expect(again.credentials.deviceId == lost.id && again.credentials.secret == lost.secret)
            // Enrolled and stored: the key is forgotten, and a start without credentials is a new enrollment.
            try FileManager.default.removeItem(atPath: configuration.resolve("credentials.json"))
            #expect(await Self.failure(configuration)?.code == .enrollmentFailed)
            let own = try await Self.client(configuration).with(again.ledgerCredentials).ownAccount()
            #expect(own.id == account.id)
        }
    }

    @Test func aBusinessReceivesACertificateForItsKeys() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .merchant, name: "Café"))
            let configuration = try await Self.configuration(.business, ledger, token: account.enrollmentToken)
            let identity = try await Self.prepare(configuration)
            let certificate = try #require(identity.certificate)
            let noiseKey = try #require(identity.noiseKey)
            #expect(certificate.merchantID == account.id && certificate.merchantName == "Café")
            #expect(certificate.noiseKey.bytes == Array(noiseKey.publicKey.rawRepresentation))
            #expect(certificate.signingKey == identity.signingKey.publicKey)
            #expect(try Self.mode(configuration.resolve("device-noise.key")) == 0o600)
        }
    }

    @Test func aCertificateFromAnotherLedgerKeyIsRefused() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .merchant, name: "Café"))
            var configuration = try await Self.configuration(.business, ledger, token: account.enrollmentToken)
            configuration.ledgerPublicKeys = [SigningKey().publicKey]
            #expect(await Self.failure(configuration)?.code == .certificateInvalid)
        }
    }

    @Test func enrollingNeedsAPrivateTokenTheLedgerAccepts() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let account = try await ledger.admin.createAccount(CreateAccount(kind: .customer, name: "Bob"))
            for (token, mode) in [(nil, 0o600), (account.enrollmentToken, 0o644), ("not-a-token", 0o600)] {
                let configuration = try await Self.configuration(.customer, ledger, token: token, tokenMode: mode)
                let error = await Self.failure(configuration)
                #expect(error?.code == .enrollmentFailed, "token \(token ?? "none"), mode \(String(mode, radix: 8))")
                #expect(error?.detail.contains(account.enrollmentToken ?? "-") == false, "the token is never told")
                #expect(!FileManager.default.fileExists(atPath: configuration.resolve("credentials.json")))
            }
        }
    }

    @Test func unreadableCredentialsStopTheDaemon() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let configuration = try await Self.configuration(.customer, ledger, token: nil)
            #expect(FileManager.default.createFile(
                atPath: configuration.resolve("credentials.json"), contents: Data("{".utf8),
                attributes: [.posixPermissions: 0o600]))
            #expect(await Self.failure(configuration)?.code == .stateUnusable)
        }
    }
}
