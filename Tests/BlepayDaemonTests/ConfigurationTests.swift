import BlepayConfiguration
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import Testing

@Suite struct DaemonConfigurationTests {
    static let key = String(repeating: "ab", count: 32)

    static func sample(_ role: DaemonConfiguration.Role) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../config/\(role.rawValue).toml").standardized.path
    }

    /// With the ledger's key set, the sample files are the defaults; as shipped, their all-zero placeholder key is
    /// refused with one line (a daemon once enrolled with it silently).
    @Test(arguments: DaemonConfiguration.Role.allCases)
    func theSampleFilesParseToTheDefaultsOnceTheLedgerKeyIsSet(role: DaemonConfiguration.Role) throws {
        let file = Self.sample(role)
        let sample = try String(contentsOfFile: file, encoding: .utf8)
        #expect(throws: ConfigurationError(file: file, key: "ledger.public_key",
            reason: "is the sample's all-zero placeholder: set the ledger's key (GET /v1/ledger-key)")) {
            try DaemonConfiguration.load(role, file: file)
        }
        let placeholder = "public_key = \"\(String(repeating: "0", count: 64))\""
        #expect(sample.contains(placeholder))
        var expected = DaemonConfiguration(role: role)
        expected.ledgerPublicKeys = [try Key32(Array(repeating: 0xAB, count: 32))]
        let configured = sample.replacingOccurrences(of: placeholder, with: "public_key = \"\(Self.key)\"")
        #expect(try DaemonConfiguration.parse(role, configured, file: file) == expected)
    }

    @Test func valuesOverrideTheDefaults() throws {
        let configuration = try DaemonConfiguration.parse(.business, """
            [bluetooth]
            adapter = "hci2"
            maximum_connections = 3
            [ledger]
            url = "https://10.0.2.1:8480"
            ca_file = "ledger-ca.pem"
            certificate_pin = "sha256/\(Data(repeating: 7, count: 32).base64EncodedString())"
            public_key = "\(Self.key)"
            [device]
            state_directory = "/srv/blepay"
            [payments]
            request_lifetime_seconds = 30
            [control]
            instance = "lane_2"
            [history]
            retention_days = 30
            [offline]
            maximum_pending_per_voucher = 2500
            """, file: "business.toml")
        #expect(configuration.offline.maximumPendingPerVoucher == 2500 && configuration.offline.maximumPendingTotal == 50_000)
        #expect(configuration.adapter == "hci2" && configuration.maximumConnections == 3)
        #expect(configuration.ledgerURL == "https://10.0.2.1:8480")
        #expect(configuration.ledgerTrust == LedgerTrust(caFile: "/srv/blepay/ledger-ca.pem", pin: Array(repeating: 7, count: 32)))
        #expect(configuration.ledgerPublicKeys.map(\.bytes) == [Array(repeating: 0xAB, count: 32)])
        #expect(configuration.requestLifetimeSeconds == 30 && configuration.maximumTipPercent == 100)
        #expect(configuration.resolve(configuration.enrollmentTokenFile) == "/srv/blepay/enrollment.token")
        #expect(configuration.busName == "org.blepay.Business.lane_2")
        #expect(configuration.historyRetentionDays == 30 && DaemonConfiguration(role: .business).historyRetentionDays == 400)
        #expect(DaemonConfiguration(role: .customer).busName == "org.blepay.Customer")
        // A pin in hex reads as the same bytes as in base64; a digest of the wrong length is no pin.
        #expect(DaemonConfiguration.certificatePin(String(repeating: "07", count: 32)) == Array(repeating: 7, count: 32))
        #expect(DaemonConfiguration.certificatePin("sha256/AAAA") == nil)
    }

    @Test func theCustomerSetsHowItsIdentityAndAddressChange() throws {
        let configuration = try DaemonConfiguration.parse(.customer, """
            [bluetooth]
            identity_lifetime_seconds = 600
            renew_address = true
            [ledger]
            public_key = "\(Self.key)"
            """, file: "customer.toml")
        #expect(configuration.identityLifetimeSeconds == 600 && configuration.renewAddress)
    }

    @Test func autoRenewIsOffByDefault() throws {
        let configuration = try DaemonConfiguration.parse(.customer, "[ledger]\npublic_key = \"\(Self.key)\"", file: "c.toml")
        #expect(configuration.vouchers == DaemonConfiguration(role: .customer).vouchers)
        #expect(!configuration.vouchers.autoRenew && configuration.vouchers.instrument.isEmpty)
        #expect(configuration.vouchers.limit == 5_000 && configuration.vouchers.renewBelow == 1_000)
        #expect(configuration.vouchers.lifetimeHours == 24 && configuration.vouchers.renewBeforeHours == 2)
        #expect(VoucherAutoRenew.Settings(configuration.vouchers) == nil)
    }

    @Test func theCustomerConfiguresAutoRenew() throws {
        let configuration = try DaemonConfiguration.parse(.customer, """
            [ledger]
            public_key = "\(Self.key)"
            [vouchers]
            auto_renew = true
            instrument = "in_card"
            currency = "JPY"
            limit = 20000
            lifetime_hours = 72
            renew_below = 5000
            renew_before_hours = 12
            """, file: "customer.toml")
        let settings = try #require(VoucherAutoRenew.Settings(configuration.vouchers))
        let limit = try Money(minorUnits: 20_000, currency: Currency("JPY"))
        #expect(settings.instrumentID == "in_card" && settings.limit == limit)
        #expect(settings.lifetimeSeconds == 72 * 3600)
        #expect(settings.policy == VoucherRenewal(
            currency: try Currency("JPY"), renewBelowMinorUnits: 5_000, renewBeforeMilliseconds: 12 * 3_600_000))
    }

    @Test(arguments: [
        (DaemonConfiguration.Role.customer, "[bluetooth]\nadapter = \"bt0\"", "bluetooth.adapter", "is an adapter name such as \"hci0\""),
        (.customer, "[ledger]\nurl = \"ftp://ledger\"", "ledger.url", "is an http:// or https:// URL"),
        (.business, "[ledger]\nurl = \"http://10.0.2.1:8480\"", "ledger.url",
         "is https:// for a ledger on another host (http:// only to 127.0.0.1, ::1 or localhost)"),
        (.customer, "[ledger]\nurl = \"http://[fd00:1ed::1]:8480\"", "ledger.url",
         "is https:// for a ledger on another host (http:// only to 127.0.0.1, ::1 or localhost)"),
        (.customer, "[ledger]\ncertificate_pin = \"abcd\"", "ledger.certificate_pin",
         "is the SHA-256 of the ledger certificate's public key: 64 hex digits or sha256/<base64>"),
        (.customer, "[ledger]\npublic_key = \"abc\"", "ledger.public_key", "is the ledger's public key: 64 hex digits"),
        (.business, "[ledger]\npublic_keys = [\"abc\"]", "ledger.public_keys", "is the ledger's public key: 64 hex digits"),
        (.business, "[ledger]\npublic_keys = \"ab\"", "ledger.public_keys", "is an array of non-empty strings"),
        (.customer, "[device]\nstate_directory = \"var/lib\"", "device.state_directory", "is an absolute path"),
        (.customer, "[bluetooth]\nmaximum_connections = 3", "bluetooth.maximum_connections", "is not a known key"),
        (.customer, "[bluetooth]\nrenew_address = \"yes\"", "bluetooth.renew_address", "is true or false"),
        (.customer, "[bluetooth]\nidentity_lifetime_seconds = 5", "bluetooth.identity_lifetime_seconds",
         "is an integer from 10 to 86400"),
        (.business, "[bluetooth]\nrenew_address = true", "bluetooth.renew_address", "is not a known key"),
        (.customer, "[payments]\nmaximum_tip_percent = 5", "payments", "is not a known key"),
        (.customer, "[control]\ninstance = \"2nd\"", "control.instance",
         "is 1 to 32 letters, digits or underscores, not starting with a digit"),
        (.business, "[control]\ninstance = \"a.b\"", "control.instance",
         "is 1 to 32 letters, digits or underscores, not starting with a digit"),
        (.business, "[bluetooth]\nmaximum_connections = 0", "bluetooth.maximum_connections", "is an integer from 1 to 32"),
        (.business, "[payments]\nrequest_lifetime_seconds = 5", "payments.request_lifetime_seconds", "is an integer from 10 to 3600"),
        (.business, "[offline]\nmaximum_pending_per_voucher = 0", "offline.maximum_pending_per_voucher",
         "is an integer from 1 to 1000000000000"),
        (.customer, "[vouchers]\nauto_renew = true", "vouchers.instrument",
         "is required when auto_renew is true (the instrument vouchers are drawn on)"),
        (.customer, "[vouchers]\nlimit = 2000\nrenew_below = 2001", "vouchers.renew_below", "is at most limit"),
        (.customer, "[vouchers]\nlifetime_hours = 2", "vouchers.renew_before_hours", "is less than lifetime_hours"),
        (.customer, "[vouchers]\nlifetime_hours = 721", "vouchers.lifetime_hours", "is an integer from 1 to 720"),
        (.customer, "[vouchers]\ncurrency = \"euro\"", "vouchers.currency", "is an ISO 4217 currency code such as \"EUR\""),
        (.business, "[vouchers]\nauto_renew = true", "vouchers", "is not a known key"),
        (.customer, "[history]\nretention_days = 0", "history.retention_days", "is an integer from 1 to 3650"),
        (.business, "[history]\nretention_days = 3651", "history.retention_days", "is an integer from 1 to 3650"),
    ])
    func badValuesNameTheFileAndTheKey(role: DaemonConfiguration.Role, text: String, key: String, reason: String) {
        let withKey = text.hasPrefix("[ledger]") ? text : text + "\n[ledger]\npublic_key = \"\(Self.key)\""
        #expect(throws: ConfigurationError(file: "d.toml", key: key, reason: reason)) {
            try DaemonConfiguration.parse(role, withKey, file: "d.toml")
        }
    }

    /// While the ledger rotates its key, the daemons trust its successor beside the active key.
    @Test func publicKeysAreTrustedBesidePublicKey() throws {
        let successor = String(repeating: "cd", count: 32)
        let both = try DaemonConfiguration.parse(.business, """
            [ledger]
            public_key = "\(Self.key)"
            public_keys = ["\(successor)", "\(Self.key)"]
            """, file: "business.toml")
        #expect(both.ledgerPublicKeys.map(\.bytes) == [Array(repeating: 0xAB, count: 32), Array(repeating: 0xCD, count: 32)])
        let listOnly = try DaemonConfiguration.parse(.customer, "[ledger]\npublic_keys = [\"\(successor)\"]", file: "c.toml")
        #expect(listOnly.ledgerPublicKeys.map(\.bytes) == [Array(repeating: 0xCD, count: 32)])
    }

    @Test func plainHTTPIsTakenToThisMachineOnly() throws {
        for url in ["http://127.0.0.1:8480", "http://[::1]:8480", "http://localhost:8480", "https://ledger.example:443"] {
            let text = "[ledger]\nurl = \"\(url)\"\npublic_key = \"\(Self.key)\""
            #expect(try DaemonConfiguration.parse(.customer, text, file: "d.toml").ledgerURL == url)
        }
    }

    @Test func theLedgerKeyIsRequired() {
        #expect(throws: ConfigurationError(file: "d.toml", key: "ledger.public_key", reason: "is required")) {
            try DaemonConfiguration.parse(.customer, "[bluetooth]\nadapter = \"hci1\"", file: "d.toml")
        }
    }
}
