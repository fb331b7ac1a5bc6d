import BlepayConfiguration
import BlepayLedgerServer
import Foundation
import Testing

@Suite struct ConfigurationTests {
    @Test func theSampleFileParsesToTheDefaults() throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/ledger.toml")
        #expect(try LedgerConfiguration.load(file: sample.path) == LedgerConfiguration())
    }

    @Test func valuesOverrideTheDefaults() throws {
        let configuration = try LedgerConfiguration.parse("""
            [server]
            port = 9000
            [storage]
            backend = "postgres"
            postgres_url = "postgres://ledger@db:5432/books"
            postgres_password_file = "/etc/blepay/pg.password"
            [ledger]
            state_directory = "/srv/ledger"
            pre_authorization_grace_seconds = 3600
            enrollment_token_lifetime_hours = 24
            """, file: "ledger.toml")
        #expect(configuration.preAuthorizationGraceSeconds == 3_600 && configuration.enrollmentTokenLifetimeHours == 24)
        #expect(configuration.port == 9000 && configuration.backend == .postgres)
        #expect(configuration.postgresPasswordFile == "/etc/blepay/pg.password")
        #expect(configuration.resolve(configuration.sqlitePath) == "/srv/ledger/ledger.sqlite")
        #expect(configuration.resolve("/abs/key") == "/abs/key")
    }

    @Test(arguments: [
        ("[server]\nport = 70000", "server.port", "is an integer from 0 to 65535"),
        ("[server]\nport = \"80\"", "server.port", "is an integer from 0 to 65535"),
        ("[storage]\nbackend = \"mysql\"", "storage.backend", "is \"sqlite\" or \"postgres\""),
        ("[storage]\nsqlite_path = \"\"", "storage.sqlite_path", "is a non-empty string"),
        ("[ledger]\nstate_dir = \"/x\"", "ledger.state_dir", "is not a known key"),
        ("[ledger]\npre_authorization_grace_seconds = -1", "ledger.pre_authorization_grace_seconds",
         "is an integer from 0 to 2592000"),
        ("[ledger]\nenrollment_token_lifetime_hours = 0", "ledger.enrollment_token_lifetime_hours",
         "is an integer from 1 to 8760"),
        ("[ledgr]\n", "ledgr", "is not a known key"),
        ("server = 1", "server", "is a table ([server])"),
    ])
    func badValuesNameTheFileAndTheKey(text: String, key: String, reason: String) {
        #expect(throws: ConfigurationError(file: "ledger.toml", key: key, reason: reason)) {
            try LedgerConfiguration.parse(text, file: "ledger.toml")
        }
    }

    @Test func aFileThatIsNotTOMLOrIsMissingIsRefused() {
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.parse("[server\nport=", file: "ledger.toml") }
        #expect(throws: ConfigurationError(file: "/nonexistent/ledger.toml", key: nil, reason: "cannot be read")) {
            try LedgerConfiguration.load(file: "/nonexistent/ledger.toml")
        }
        #expect(ConfigurationError(file: "f.toml", key: "server.port", reason: "is bad").description
            == "config.invalid: f.toml: server.port is bad")
    }
}
