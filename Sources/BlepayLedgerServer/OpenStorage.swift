import BlepayConfiguration
import BlepayLedgerStore
import Foundation
import Logging

extension LedgerServer {
    /// The configured database, opened and migrated. The PostgreSQL password comes from its own file, so the
    /// configuration file can be world-readable. Unless `creating`, a database without a ledger (a SQLite file that
    /// is not there, a PostgreSQL database without the schema) is `storage.no-ledger`, and nothing is created:
    /// the operator's commands must not leave an empty ledger behind a mistyped path.
    public static func openStorage(_ configuration: LedgerConfiguration, creating: Bool = true, logger: Logger)
        async throws -> any LedgerStorage
    {
        let storage: any LedgerStorage
        switch configuration.backend {
        case .sqlite:
            let path = configuration.resolve(configuration.sqlitePath)
            guard creating || FileManager.default.fileExists(atPath: path) else {
                throw StorageError(.noLedger, "no ledger database at \(path)")
            }
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
        if !creating {
            do { try await storage.requireLedger() } catch {
                try? await storage.close()
                throw error
            }
        }
        try await storage.migrate()
        return storage
    }
}
