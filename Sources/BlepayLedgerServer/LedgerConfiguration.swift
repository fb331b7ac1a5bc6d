import Foundation
import TOMLKit

/// `blepay-ledger`'s settings, read from a TOML file (`config/ledger.toml` documents every key). A key the file
/// leaves out takes its default; an unknown key, a wrong type or a value out of range is a `ConfigurationError`
/// naming the file and the key.
public struct LedgerConfiguration: Sendable, Hashable {
    public enum Backend: String, Sendable, Hashable, Codable { case sqlite, postgres }

    public var host = "127.0.0.1"
    public var port = 8480
    public var backend = Backend.sqlite
    /// SQLite: the database file; relative to the state directory.
    public var sqlitePath = "ledger.sqlite"
    /// PostgreSQL: `postgres://user@host:port/database`; the password is read from `postgresPasswordFile`.
    public var postgresURL = "postgres://blepay@127.0.0.1:5432/blepay"
    public var postgresPasswordFile: String?
    public var postgresConnections = 8
    public var stateDirectory = "/var/lib/blepay-ledger"
    /// The ledger's Ed25519 signing key (32-byte seed), created on first start with mode 0600.
    public var signingKeyFile = "ledger-signing.key"
    /// The operator's bearer token, created on first start with mode 0600.
    public var adminTokenFile = "admin.token"
    public var expiryIntervalSeconds = 5
    public var certificateLifetimeDays = 365

    public init() {}

    /// A path from the file, relative paths resolved in the state directory.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (stateDirectory as NSString).appendingPathComponent(path)
    }

    /// Reads `file`. A missing file is an error: the defaults are taken only when no file is named.
    public static func load(file: String) throws(ConfigurationError) -> LedgerConfiguration {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigurationError(file: file, key: nil, reason: "cannot be read")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: file)
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> LedgerConfiguration {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch {
            let where_ = (error as? TOMLParseError).map { " at line \($0.source.begin.line)" } ?? ""
            throw ConfigurationError(file: file, key: nil, reason: "is not valid TOML\(where_)")
        }
        var configuration = LedgerConfiguration()
        var reader = TableReader(table: table, file: file)
        try reader.section("server") { section throws(ConfigurationError) in
            try section.string("host", into: &configuration.host)
            try section.integer("port", into: &configuration.port, in: 0...65535)
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
        }
        try reader.section("ledger") { section throws(ConfigurationError) in
            try section.string("state_directory", into: &configuration.stateDirectory)
            try section.string("signing_key_file", into: &configuration.signingKeyFile)
            try section.string("admin_token_file", into: &configuration.adminTokenFile)
            try section.integer("expiry_interval_seconds", into: &configuration.expiryIntervalSeconds, in: 1...3600)
            try section.integer("certificate_lifetime_days", into: &configuration.certificateLifetimeDays, in: 1...3650)
        }
        try reader.finish()
        return configuration
    }
}

/// A configuration file that cannot be used, said in one line: the file, the key and why.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public static let code = "config.invalid"
    public let file: String
    public let key: String?
    public let reason: String

    public init(file: String, key: String?, reason: String) {
        self.file = file
        self.key = key
        self.reason = reason
    }

    public var description: String {
        "\(Self.code): \(file): " + (key.map { "\($0) \(reason)" } ?? reason)
    }
}

/// Reads known keys out of a TOML table and refuses the rest.
struct TableReader {
    let table: TOMLTable
    let file: String
    var prefix = ""
    private var known: Set<String> = []

    init(table: TOMLTable, file: String, prefix: String = "") {
        self.table = table
        self.file = file
        self.prefix = prefix
    }

    func error(_ key: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(file: file, key: prefix + key, reason: reason)
    }

    mutating func section(_ name: String, _ body: (inout TableReader) throws(ConfigurationError) -> Void)
        throws(ConfigurationError)
    {
        known.insert(name)
        guard let value = table[name] else { return }
        guard let section = value.table else { throw error(name, "is a table ([\(name)])") }
        var reader = TableReader(table: section, file: file, prefix: prefix + name + ".")
        try body(&reader)
        try reader.finish()
    }

    mutating func string(_ key: String, into value: inout String) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let string = raw.string, !string.isEmpty else { throw error(key, "is a non-empty string") }
        value = string
    }

    mutating func integer(_ key: String, into value: inout Int, in range: ClosedRange<Int>) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let integer = raw.int, range.contains(integer) else {
            throw error(key, "is an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        value = integer
    }

    func finish() throws(ConfigurationError) {
        if let unknown = table.keys.sorted().first(where: { !known.contains($0) }) {
            throw error(unknown, "is not a known key")
        }
    }
}
