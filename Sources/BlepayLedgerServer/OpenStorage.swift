import BlepayConfiguration
import BlepayLedgerStore
import Foundation
import Logging

extension LedgerServer {
    /// The configured database, opened and migrated. The PostgreSQL password comes from its own file, so the
    /// configuration file can be world-readable.
    public static func openStorage(_ configuration: LedgerConfiguration, logger: Logger) async throws -> any LedgerStorage {
        let storage: any LedgerStorage
        switch configuration.backend {
        case .sqlite:
            try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            storage = try SQLiteStorage(path: configuration.resolve(configuration.sqlitePath), logger: logger)
        case .postgres:
            var postgres = try PostgresStorage.Configuration(url: configuration.postgresURL,
                connections: configuration.postgresConnections)
            postgres.tls = configuration.postgresTLS
            postgres.caFile = configuration.postgresCAFile.map(configuration.resolve)
            if let file = configuration.postgresPasswordFile {
                let password = try SecretFile.load(configuration.resolve(file))
                postgres.password = String(decoding: password, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            storage = try await PostgresStorage(configuration: postgres, logger: logger)
        }
        try await storage.migrate()
        return storage
    }
}
