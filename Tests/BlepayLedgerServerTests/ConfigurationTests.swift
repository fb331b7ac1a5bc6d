import BlepayConfiguration
import BlepayLedgerServer
import BlepayLedgerStore
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
        ("[tls]\ncertificate_file = \"ledger.crt\"", "tls.key_file", "is required with certificate_file"),
        ("[tls]\nkey_file = \"ledger.key\"", "tls.certificate_file", "is required with key_file"),
        ("[server]\nhost = \"0.0.0.0\"", "server.host",
         "is not a loopback address and [tls] is not set: set tls.certificate_file and tls.key_file, or bind to 127.0.0.1 behind a TLS proxy"),
        ("[server]\nhost = \"::\"", "server.host",
         "is not a loopback address and [tls] is not set: set tls.certificate_file and tls.key_file, or bind to 127.0.0.1 behind a TLS proxy"),
        ("[storage]\npostgres_tls = \"prefer\"", "storage.postgres_tls", "is \"disable\", \"require\" or \"verify-full\""),
    ])
    func badValuesNameTheFileAndTheKey(text: String, key: String, reason: String) {
        #expect(throws: ConfigurationError(file: "ledger.toml", key: key, reason: reason)) {
            try LedgerConfiguration.parse(text, file: "ledger.toml")
        }
    }

    @Test func plainHTTPIsServedOnLoopbackOnlyAndHTTPSAnywhere() throws {
        for host in ["127.0.0.1", "127.8.0.1", "::1", "localhost"] {
            #expect(try LedgerConfiguration.parse("[server]\nhost = \"\(host)\"", file: "ledger.toml").host == host)
        }
        let configuration = try LedgerConfiguration.parse("""
            [server]
            host = "::"
            [tls]
            certificate_file = "tls/ledger.crt"
            key_file = "/etc/blepay/ledger.key"
            [storage]
            postgres_tls = "verify-full"
            postgres_ca_file = "postgres-ca.pem"
            """, file: "ledger.toml")
        #expect(configuration.servesTLS && configuration.resolve(configuration.tlsCertificateFile!) == "/var/lib/blepay-ledger/tls/ledger.crt")
        #expect(configuration.tlsKeyFile == "/etc/blepay/ledger.key")
        #expect(configuration.postgresTLS == .verifyFull && configuration.postgresCAFile == "postgres-ca.pem")
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
