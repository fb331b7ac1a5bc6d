import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Testing

/// The ledger's connections to PostgreSQL over TLS, against the real server `scripts/postgres.sh` sets up.
@Suite struct PostgresTLSTests {
    func configuration(_ tls: PostgresTLSMode, caFile: String?) throws -> PostgresStorage.Configuration {
        var configuration = try PostgresStorage.Configuration(url: testPostgresURL, connections: 1)
        configuration.tls = tls
        configuration.caFile = caFile
        return configuration
    }

    /// Whether the storage's connection is encrypted, as the server sees it.
    func encrypted(_ configuration: PostgresStorage.Configuration) async throws -> Bool {
        let storage = try await PostgresStorage(configuration: configuration, logger: testLogger)
        let ssl = try await storage.read { tx in
            try tx.rows("SELECT ssl::int FROM pg_stat_ssl WHERE pid = pg_backend_pid()", [])[0].integer(0)
        }
        try await storage.close()
        return ssl == 1
    }

    @Test func verifyFullConnectsWithTheCAThatSignedTheServer() async throws {
        #expect(FileManager.default.isReadableFile(atPath: testPostgresCAFile),
            "no CA at \(testPostgresCAFile): run `sudo scripts/postgres.sh`, or set BLEPAY_TEST_POSTGRES_CA")
        #expect(try await encrypted(configuration(.verifyFull, caFile: testPostgresCAFile)))
        #expect(try await !encrypted(configuration(.disable, caFile: nil)))
    }

    @Test func verifyFullRefusesAServerCertificateFromAnotherCA() async throws {
        let other = try TestCertificateAuthority(name: "not the database's CA")
        defer { other.remove() }
        do {
            _ = try await PostgresStorage(configuration: configuration(.verifyFull, caFile: other.caFile), logger: testLogger)
            Issue.record("connected to a server whose certificate the CA did not sign")
        } catch let error as StorageError {
            #expect(error.code == .unavailable)
            #expect(error.detail.contains("CERTIFICATE_VERIFY_FAILED"), "\(error)")
        }
        // "require" encrypts without checking who answers.
        #expect(try await encrypted(configuration(.require, caFile: other.caFile)))
    }

    @Test func anUnreadableCAFileIsSaid() async throws {
        await #expect(throws: StorageError.self) {
            try await PostgresStorage(configuration: configuration(.verifyFull, caFile: "/nonexistent/ca.pem"), logger: testLogger)
        }
    }
}
