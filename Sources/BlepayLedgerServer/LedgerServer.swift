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
import NIOCore
import Prometheus
import ServiceLifecycle

/// The ledger's HTTP server: the API over one storage, a sweeper that expires what ran out of time, and the key
/// files in the state directory. `blepay-ledger serve` runs it; the tests run it in-process on a free port.
public struct LedgerServer: Sendable {
    public let configuration: LedgerConfiguration
    public let storage: any LedgerStorage
    /// The ledger's keys (`LedgerKeyFiles`), reloaded while it runs.
    public let keyring: LedgerKeyring
    /// What it counts (`LedgerMetrics`), as `GET /metrics` shows the operator.
    public let metrics: PrometheusCollectorRegistry
    let api: LedgerAPI
    let sweeper: ExpirySweeper
    let keyReload: KeyReload

    /// How often a running ledger looks for a rotation made with `blepay-ledger rotate-key` or `activate-key`.
    public static let keyReloadInterval: Duration = .seconds(2)

    /// The active key: what signs now.
    public var ledgerKey: SigningKey { keyring.current.active }

    /// `clock` is the ledger's time; tests move it to expire things.
    public init(configuration: LedgerConfiguration, storage: any LedgerStorage, logger: Logger,
        clock: @escaping @Sendable () -> Timestamp = LedgerServer.systemClock) throws
    {
        try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        keyring = LedgerKeyring(try LedgerKeyFiles.load(configuration))
        let adminToken = try Self.adminToken(configuration)
        var operations = LedgerOperations(keyring: keyring)
        operations.certificateLifetimeMilliseconds = UInt64(configuration.certificateLifetimeDays) * 86_400_000
        operations.preAuthorizationGraceMilliseconds = UInt64(configuration.preAuthorizationGraceSeconds) * 1000
        operations.enrollmentTokenLifetimeMilliseconds = UInt64(configuration.enrollmentTokenLifetimeHours) * 3_600_000
        // Another ledger process may change a shared database; this one alone writes its SQLite file.
        let watch = ChangeWatch(pollInterval: storage.dialect == .postgres ? .milliseconds(250) : nil)
        self.configuration = configuration
        self.storage = storage
        metrics = PrometheusCollectorRegistry()
        api = LedgerAPI(storage: storage, operations: operations, adminTokenHash: SHA256.hash(data: Array(adminToken.utf8)),
            watch: watch, clock: clock, logger: logger, metrics: LedgerMetrics(registry: metrics))
        sweeper = ExpirySweeper(storage: storage, operations: operations, watch: watch,
            interval: .seconds(configuration.expiryIntervalSeconds), clock: clock, logger: logger)
        keyReload = KeyReload(configuration: configuration, keyring: keyring, interval: Self.keyReloadInterval, logger: logger)
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
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some Service
    {
        var server = HTTPServerBuilder.http1(configuration: http1)
        if let certificate = configuration.tlsCertificateFile, let key = configuration.tlsKeyFile {
            let credentials = try ServerCertificate(certificatePath: configuration.resolve(certificate),
                keyPath: configuration.resolve(key), file: configurationFile, logger: logger)
            server = try .tls(.http1(configuration: http1), tlsConfiguration: credentials.serverConfiguration())
        }
        return LedgerHTTPService(server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "blepay-ledger",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maximumConnections, logger: logger)),
            responder: api.routes().buildResponder(), services: [sweeper, keyReload],
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// HTTP/1.1 with every wait bounded, so that slow or half-sent requests cannot hold the ledger's connections:
    /// heads of at most 16 KiB, the idle timeout, and `RequestDeadline` for bodies.
    var http1: HTTP1Channel.Configuration {
        let requestTimeout = TimeAmount.seconds(Int64(configuration.requestTimeoutSeconds))
        return HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadline(limit: requestTimeout), CallerPresence.Watch()],
            idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds)),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 8 * 1024, maxHeaderListSize: 16 * 1024, maxHeaderFieldCount: 100))
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
