import BlepayConfiguration
import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import ServiceLifecycle

/// The ledger's HTTP server: the API over one storage, a sweeper that expires what ran out of time, and the key
/// files in the state directory. `blepay-ledger serve` runs it; the tests run it in-process on a free port.
public struct LedgerServer: Sendable {
    public let configuration: LedgerConfiguration
    public let storage: any LedgerStorage
    public let ledgerKey: SigningKey
    let api: LedgerAPI
    let sweeper: ExpirySweeper

    /// `clock` is the ledger's time; tests move it to expire things.
    public init(configuration: LedgerConfiguration, storage: any LedgerStorage, logger: Logger,
        clock: @escaping @Sendable () -> Timestamp = LedgerServer.systemClock) throws
    {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let seed = try SecretFile.loadOrCreate(configuration.resolve(configuration.signingKeyFile)) { SigningKey().seed }
        ledgerKey = try SigningKey(seed: seed)
        let adminToken = try Self.adminToken(configuration)
        var operations = LedgerOperations(ledgerKey: ledgerKey)
        operations.certificateLifetimeMilliseconds = UInt64(configuration.certificateLifetimeDays) * 86_400_000
        operations.preAuthorizationGraceMilliseconds = UInt64(configuration.preAuthorizationGraceSeconds) * 1000
        let watch = PaymentWatch()
        self.configuration = configuration
        self.storage = storage
        api = LedgerAPI(storage: storage, operations: operations, adminTokenHash: SHA256.hash(data: Array(adminToken.utf8)),
            watch: watch, clock: clock, logger: logger)
        sweeper = ExpirySweeper(storage: storage, operations: operations, watch: watch,
            interval: .seconds(configuration.expiryIntervalSeconds), clock: clock, logger: logger)
    }

    /// The operator's token, from its file (made on first start).
    public static func adminToken(_ configuration: LedgerConfiguration) throws -> String {
        let bytes = try SecretFile.loadOrCreate(configuration.resolve(configuration.adminTokenFile)) {
            Array(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString().utf8)
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The HTTP application, HTTPS with `[tls]`; `onRunning` gets the bound port (useful with port 0). Throws a
    /// `ConfigurationError` naming `configurationFile` when the certificate or key file cannot be used.
    public func application(configurationFile: String, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol
    {
        var server = HTTPServerBuilder.http1()
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            let credentials = try ServerCertificate(certificatePath: configuration.resolve(certificate),
                keyPath: configuration.resolve(key), file: configurationFile, logger: logger)
            server = try .tls(.http1(), tlsConfiguration: credentials.serverConfiguration())
        }
        return Application(router: api.routes(), server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "blepay-ledger"),
            services: [sweeper],
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Everything wrong with the books (empty when sound).
    public func audit() async throws -> [String] {
        let operations = api.operations
        return try await storage.read { tx in try operations.audit(tx) }
    }

    public static let systemClock: @Sendable () -> Timestamp = {
        Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
    }
}
