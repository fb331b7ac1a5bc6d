import BlepayConfiguration
import BlepayLedgerStore
import Foundation

/// `blepay-ledger`'s settings, read from a TOML file (`config/ledger.toml` documents every key). A key the file
/// leaves out takes its default; an unknown key, a wrong type or a value out of range is a `ConfigurationError`
/// naming the file and the key.
public struct LedgerConfiguration: Sendable, Hashable {
    public enum Backend: String, Sendable, Hashable, Codable { case sqlite, postgres }

    public var host = "127.0.0.1"
    public var port = 8480
    /// How long a connection may wait for a request's head, or stay open with none (seconds).
    public var idleTimeoutSeconds = 15
    /// How long a request's body may take to arrive once its head has (seconds).
    public var requestTimeoutSeconds = 10
    /// Connections served at once; more wait to be accepted. Keep under the open-files limit (`LimitNOFILE`).
    public var maximumConnections = 1024
    public var backend = Backend.sqlite
    /// SQLite: the database file; relative to the state directory.
    public var sqlitePath = "ledger.sqlite"
    /// PostgreSQL: `postgres://user@host:port/database`; the password is read from `postgresPasswordFile`.
    public var postgresURL = "postgres://blepay@127.0.0.1:5432/blepay"
    public var postgresPasswordFile: String?
    public var postgresConnections = 8
    /// PostgreSQL: TLS to the server ("verify-full" for one on another host), and the roots it trusts (PEM; the
    /// system's when unset), relative to the state directory.
    public var postgresTLS = PostgresTLSMode.disable
    public var postgresCAFile: String?
    public var stateDirectory = "/var/lib/blepay-ledger"
    /// The ledger's Ed25519 signing key (32-byte seed), created on first start with mode 0600.
    public var signingKeyFile = "ledger-signing.key"
    /// The operator's bearer token, created on first start with mode 0600.
    public var adminTokenFile = "admin.token"
    public var expiryIntervalSeconds = 5
    public var certificateLifetimeDays = 365
    /// How long after a voucher's expiry its offline payments may still be settled before the rest of its escrow
    /// returns to the customer, voided or not.
    public var preAuthorizationGraceSeconds = 86_400
    /// How long an enrollment token the ledger issues enrolls a device.
    public var enrollmentTokenLifetimeHours = 72
    /// `[logging] level`: the least severe level logged; a reload (SIGHUP) changes it at once.
    public var logLevel = "info"
    /// HTTPS: the server's certificate chain and private key (PEM), relative to the state directory. Without them
    /// the ledger speaks plain HTTP, and only on a loopback address.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?

    public init() {}

    /// Whether the ledger serves HTTPS.
    public var servesTLS: Bool { tlsCertificateFile != nil }

    /// A path from the file, relative paths resolved in the state directory.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (stateDirectory as NSString).appendingPathComponent(path)
    }

    /// Reads `file`. A missing file is an error: the defaults are taken only when no file is named.
    public static func load(file: String) throws(ConfigurationError) -> LedgerConfiguration {
        try read(TableReader.load(file: file))
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> LedgerConfiguration {
        try read(TableReader.parse(text, file: file))
    }

    private static func read(_ table: TableReader) throws(ConfigurationError) -> LedgerConfiguration {
        var reader = table
        var configuration = LedgerConfiguration()
        try reader.section("server") { section throws(ConfigurationError) in
            try section.string("host", into: &configuration.host)
            try section.integer("port", into: &configuration.port, in: 0...65535)
            try section.integer("idle_timeout_seconds", into: &configuration.idleTimeoutSeconds, in: 1...3600)
            try section.integer("request_timeout_seconds", into: &configuration.requestTimeoutSeconds, in: 1...3600)
            try section.integer("max_connections", into: &configuration.maximumConnections, in: 1...65536)
        }
        try reader.section("storage") { section throws(ConfigurationError) in
            var backend = configuration.backend.rawValue
            try section.string("backend", into: &backend)
            guard let value = Backend(rawValue: backend) else {
                throw section.error("backend", "is \"sqlite\" or \"postgres\"")
            }
            configuration.backend = value
            try section.string("sqlite_path", into: &configuration.sqlitePath)
            try section.string("postgres_url", into: &configuration.postgresURL)
            var passwordFile = configuration.postgresPasswordFile ?? ""
            try section.string("postgres_password_file", into: &passwordFile)
            configuration.postgresPasswordFile = passwordFile.isEmpty ? nil : passwordFile
            try section.integer("postgres_connections", into: &configuration.postgresConnections, in: 1...256)
            var tls = configuration.postgresTLS.rawValue
            try section.string("postgres_tls", into: &tls)
            guard let mode = PostgresTLSMode(rawValue: tls) else {
                throw section.error("postgres_tls", "is \"disable\", \"require\" or \"verify-full\"")
            }
            configuration.postgresTLS = mode
            var caFile = ""
            try section.string("postgres_ca_file", into: &caFile)
            configuration.postgresCAFile = caFile.isEmpty ? nil : caFile
        }
        try reader.section("ledger") { section throws(ConfigurationError) in
            try section.string("state_directory", into: &configuration.stateDirectory)
            try section.string("signing_key_file", into: &configuration.signingKeyFile)
            try section.string("admin_token_file", into: &configuration.adminTokenFile)
            try section.integer("expiry_interval_seconds", into: &configuration.expiryIntervalSeconds, in: 1...3600)
            try section.integer("certificate_lifetime_days", into: &configuration.certificateLifetimeDays, in: 1...3650)
            try section.integer("pre_authorization_grace_seconds", into: &configuration.preAuthorizationGraceSeconds,
                in: 0...2_592_000)
            try section.integer("enrollment_token_lifetime_hours", into: &configuration.enrollmentTokenLifetimeHours,
                in: 1...8760)
        }
        try reader.section("tls") { section throws(ConfigurationError) in
            var certificate = "", key = ""
            try section.string("certificate_file", into: &certificate)
            try section.string("key_file", into: &key)
            if certificate.isEmpty != key.isEmpty {
                throw section.error(certificate.isEmpty ? "certificate_file" : "key_file",
                    "is required with \(certificate.isEmpty ? "key_file" : "certificate_file")")
            }
            configuration.tlsCertificateFile = certificate.isEmpty ? nil : certificate
            configuration.tlsKeyFile = key.isEmpty ? nil : key
        }
        try reader.logging(into: &configuration.logLevel)
        try reader.finish()
        // Card numbers, enrollment tokens and device secrets cross this connection: in clear only on this machine. An
        // operator with a TLS proxy in front binds to loopback behind it.
        if !configuration.servesTLS, !Loopback.contains(configuration.host) {
            throw ConfigurationError(file: table.file, key: "server.host",
                reason: "is not a loopback address and [tls] is not set: set tls.certificate_file and tls.key_file, or bind to 127.0.0.1 behind a TLS proxy")
        }
        return configuration
    }
}
