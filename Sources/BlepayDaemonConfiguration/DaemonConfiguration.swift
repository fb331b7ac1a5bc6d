import BlepayConfiguration
import BlepayControl
import BlepayProtocol
import FoundationEssentials

/// A daemon's settings, read from its TOML file (`config/customer.toml`, `config/business.toml` document every
/// key). A key the file leaves out takes its default, except the ledger's public key, which every daemon needs; a
/// key of the other role's file is unknown here.
public struct DaemonConfiguration: Sendable, Hashable {
    public typealias Role = DaemonRole

    public let role: Role
    /// The Bluetooth adapter (`hci0`, …).
    public var adapter = "hci0"
    /// Whether a payment session may run over an LE credit-based L2CAP channel rather than GATT (docs/protocol.md
    /// §9): a customer listens for one and names its PSM in the info characteristic, a business opens one when a
    /// customer names it. GATT is used otherwise, and always remains served.
    public var l2cap = true
    /// Business: customers connected at once.
    public var maximumConnections = 20
    /// Customer: how long one advertising identity (ephemeral id and handshake key) is used, in seconds.
    public var identityLifetimeSeconds = 900
    /// Customer: whether the adapter is powered off and on when the identity is replaced, so that the BLE address
    /// (a resolvable private address under bluetoothd's `Privacy`) changes with it.
    public var renewAddress = false
    /// The ledger's HTTP API: `https://`, or `http://` to this machine only.
    public var ledgerURL = "http://127.0.0.1:8480"
    /// PEM roots the ledger's certificate must chain to instead of the system's; relative to the state directory.
    public var ledgerCAFile: String?
    /// The SHA-256 of the ledger certificate's public key (SubjectPublicKeyInfo), which it must carry.
    public var ledgerCertificatePin: [UInt8]?
    /// The ledger's Ed25519 public keys (`public_key` and `public_keys` together): merchant certificates, receipts,
    /// vouchers and deny lists must be signed by one of them, found by the key id each carries. Several while the
    /// ledger rotates its key: its successor is added before it signs, its predecessor kept while what it signed is
    /// still in use.
    public var ledgerPublicKeys: [Key32] = []
    /// Customer: how often the ledger is probed once found unreachable (while reachable, a standing call stands in),
    /// and what waits sent, in seconds; reachability decides whether an offline request is executed here or paid
    /// under a pre-authorization, and what the advertisement says.
    public var ledgerProbeSeconds = 10
    /// The account's enrollment token, used once to register this device; relative to the state directory.
    public var enrollmentTokenFile = "enrollment.token"
    public var stateDirectory: String
    /// The name the device registers with the ledger.
    public var deviceName: String
    /// Business: how long a payment request stays open, in seconds.
    public var requestLifetimeSeconds = 120
    /// Business: the largest tip accepted, in percent of the amount.
    public var maximumTipPercent = 100
    /// Business: what is taken while the ledger cannot be reached.
    public var offline = Offline()
    /// Customer: the vouchers the daemon obtains by itself.
    public var vouchers = Vouchers()
    /// Set when several daemons of a role share a host: the bus name gets it as its last element.
    public var instance: String?
    /// How many days an ended payment stays in the history after its last change; open ones always stay.
    public var historyRetentionDays = 400
    /// `[logging] level`: the least severe level logged; a reload (SIGHUP) changes it at once.
    public var logLevel = "info"
    /// `[metrics] port`: the loopback port `GET /metrics` is served on; 0, the default, serves none.
    public var metricsPort = 0

    /// Business: payments under customers' pre-authorizations while the ledger cannot be reached, and the merchant's
    /// limits on them (amounts in minor units of `currency`, the one currency taken offline).
    public struct Offline: Sendable, Hashable {
        public var enabled = true
        public var currency = "EUR"
        public var maximumPayment = 5_000
        public var maximumPendingCount = 100
        public var maximumPendingTotal = 50_000
        public var maximumPendingHours = 72
        /// What may wait under one customer's voucher.
        public var maximumPendingPerVoucher = 10_000
        /// How old the ledger's deny list may be for vouchers to be taken.
        public var maximumDenyListHours = 24
        /// How often waiting payments are sent to the ledger, and the ledger probed while it cannot be reached.
        public var settleIntervalSeconds = 10
    }

    /// Customer: vouchers obtained without being asked, so that a pre-authorization is at hand when both sides are
    /// offline (amounts in minor units of `currency`). Off by default: each one moves `limit` into escrow.
    public struct Vouchers: Sendable, Hashable {
        public var autoRenew = false
        /// The instrument each voucher is drawn on; required when `autoRenew` is set.
        public var instrument = ""
        public var currency = "EUR"
        public var limit = 5_000
        public var lifetimeHours = 24
        /// A new one is obtained once what is left on the usable vouchers in `currency` is below this…
        public var renewBelow = 1_000
        /// …or once every one of them expires within this many hours.
        public var renewBeforeHours = 2
    }

    /// The well-known name this daemon owns on the bus.
    public var busName: String { ControlAPI.busName(role, instance: instance) }

    public init(role: Role) {
        self.role = role
        stateDirectory = "/var/lib/blepay-\(role.rawValue)"
        deviceName = "blepay \(role.rawValue)"
    }

    /// A path from the file, relative paths resolved in the state directory.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : stateDirectory.hasSuffix("/") ? stateDirectory + path : stateDirectory + "/" + path
    }

    /// Reads `file`; a missing file is an error.
    public static func load(_ role: Role, file: String) throws(ConfigurationError) -> DaemonConfiguration {
        try read(role, TableReader.load(file: file))
    }

    public static func parse(_ role: Role, _ text: String, file: String) throws(ConfigurationError)
        -> DaemonConfiguration
    {
        try read(role, TableReader.parse(text, file: file))
    }

    private static func read(_ role: Role, _ table: TableReader) throws(ConfigurationError) -> DaemonConfiguration {
        var reader = table
        var configuration = DaemonConfiguration(role: role)
        try reader.section("bluetooth") { section throws(ConfigurationError) in
            try section.string("adapter", into: &configuration.adapter)
            guard configuration.adapter.wholeMatch(of: /hci[0-9]{1,3}/) != nil else {
                throw section.error("adapter", "is an adapter name such as \"hci0\"")
            }
            try section.boolean("l2cap", into: &configuration.l2cap)
            switch role {
            case .business:
                try section.integer("maximum_connections", into: &configuration.maximumConnections, in: 1...32)
            case .customer:
                try section.integer(
                    "identity_lifetime_seconds", into: &configuration.identityLifetimeSeconds, in: 10...86400)
                try section.boolean("renew_address", into: &configuration.renewAddress)
            }
        }
        try reader.section("ledger") { section throws(ConfigurationError) in
            try section.string("url", into: &configuration.ledgerURL)
            guard let url = URL(string: configuration.ledgerURL), let scheme = url.scheme, ["http", "https"].contains(scheme),
                let host = url.host
            else { throw section.error("url", "is an http:// or https:// URL") }
            // The enrollment token, the cards and every payment would cross the network in clear.
            guard scheme == "https" || Loopback.contains(host) else {
                throw section.error("url", "is https:// for a ledger on another host (http:// only to 127.0.0.1, ::1 or localhost)")
            }
            var caFile = ""
            try section.string("ca_file", into: &caFile)
            configuration.ledgerCAFile = caFile.isEmpty ? nil : caFile
            var pin = ""
            try section.string("certificate_pin", into: &pin)
            if !pin.isEmpty {
                guard let bytes = Self.certificatePin(pin) else {
                    throw section.error("certificate_pin",
                        "is the SHA-256 of the ledger certificate's public key: 64 hex digits or sha256/<base64>")
                }
                configuration.ledgerCertificatePin = bytes
            }
            try section.string("enrollment_token_file", into: &configuration.enrollmentTokenFile)
            if role == .customer {
                try section.integer("probe_interval_seconds", into: &configuration.ledgerProbeSeconds, in: 1...3600)
            }
            var key = ""
            try section.string("public_key", into: &key)
            var keys: [String] = []
            try section.strings("public_keys", into: &keys)
            for (name, text) in (key.isEmpty ? [] : [("public_key", key)]) + keys.map({ ("public_keys", $0) }) {
                guard let bytes = Hex.decode(text, limit: 32), let parsed = try? Key32(bytes) else {
                    throw section.error(name, "is the ledger's public key: 64 hex digits")
                }
                // The sample file's placeholder: trusting it would enroll against no ledger in particular.
                guard bytes.contains(where: { $0 != 0 }) else {
                    throw section.error(name, "is the sample's all-zero placeholder: set the ledger's key (GET /v1/ledger-key)")
                }
                if !configuration.ledgerPublicKeys.contains(parsed) { configuration.ledgerPublicKeys.append(parsed) }
            }
        }
        try reader.section("device") { section throws(ConfigurationError) in
            try section.string("state_directory", into: &configuration.stateDirectory)
            guard configuration.stateDirectory.hasPrefix("/") else {
                throw section.error("state_directory", "is an absolute path")
            }
            try section.string("name", into: &configuration.deviceName)
            guard configuration.deviceName.count <= 64 else { throw section.error("name", "is at most 64 characters") }
        }
        try reader.section("control") { section throws(ConfigurationError) in
            var instance = ""
            try section.string("instance", into: &instance)
            guard !instance.isEmpty else { return }
            guard instance.wholeMatch(of: /[A-Za-z_][A-Za-z0-9_]{0,31}/) != nil else {
                throw section.error("instance", "is 1 to 32 letters, digits or underscores, not starting with a digit")
            }
            configuration.instance = instance
        }
        try reader.logging(into: &configuration.logLevel)
        try reader.section("metrics") { section throws(ConfigurationError) in
            try section.integer("port", into: &configuration.metricsPort, in: 0...65535)
        }
        try reader.section("history") { section throws(ConfigurationError) in
            try section.integer("retention_days", into: &configuration.historyRetentionDays, in: 1...3650)
        }
        if role == .business {
            try reader.section("payments") { section throws(ConfigurationError) in
                try section.integer("request_lifetime_seconds", into: &configuration.requestLifetimeSeconds, in: 10...3600)
                try section.integer("maximum_tip_percent", into: &configuration.maximumTipPercent, in: 0...1000)
            }
            try reader.section("offline") { section throws(ConfigurationError) in
                try section.boolean("enabled", into: &configuration.offline.enabled)
                try section.string("currency", into: &configuration.offline.currency)
                guard (try? Currency(configuration.offline.currency)) != nil else {
                    throw section.error("currency", "is an ISO 4217 currency code such as \"EUR\"")
                }
                let money = 1...1_000_000_000_000
                try section.integer("maximum_payment", into: &configuration.offline.maximumPayment, in: money)
                try section.integer("maximum_pending_count", into: &configuration.offline.maximumPendingCount, in: 1...10_000)
                try section.integer("maximum_pending_total", into: &configuration.offline.maximumPendingTotal, in: money)
                try section.integer("maximum_pending_hours", into: &configuration.offline.maximumPendingHours, in: 1...720)
                try section.integer(
                    "maximum_pending_per_voucher", into: &configuration.offline.maximumPendingPerVoucher, in: money)
                try section.integer("maximum_deny_list_hours", into: &configuration.offline.maximumDenyListHours, in: 1...720)
                try section.integer("settle_interval_seconds", into: &configuration.offline.settleIntervalSeconds, in: 1...3600)
            }
        }
        if role == .customer {
            try reader.section("vouchers") { section throws(ConfigurationError) in
                try readVouchers(&section, into: &configuration.vouchers)
            }
        }
        try reader.finish()
        guard !configuration.ledgerPublicKeys.isEmpty else {
            throw ConfigurationError(file: table.file, key: "ledger.public_key", reason: "is required")
        }
        return configuration
    }

    /// A certificate pin as written in the file: 64 hex digits, or `sha256/` and the digest in base64 (as
    /// `openssl … | openssl dgst -sha256 -binary | base64` prints it).
    public static func certificatePin(_ text: String) -> [UInt8]? {
        let bytes: [UInt8]? = if text.hasPrefix("sha256/") {
            Data(base64Encoded: String(text.dropFirst("sha256/".count))).map { [UInt8]($0) }
        } else {
            Hex.decode(text, limit: 32)
        }
        return bytes?.count == 32 ? bytes : nil
    }

    private static func readVouchers(_ section: inout TableReader, into vouchers: inout Vouchers)
        throws(ConfigurationError)
    {
        try section.boolean("auto_renew", into: &vouchers.autoRenew)
        try section.string("instrument", into: &vouchers.instrument)
        if vouchers.autoRenew, vouchers.instrument.isEmpty {
            throw section.error("instrument", "is required when auto_renew is true (the instrument vouchers are drawn on)")
        }
        try section.string("currency", into: &vouchers.currency)
        guard (try? Currency(vouchers.currency)) != nil else {
            throw section.error("currency", "is an ISO 4217 currency code such as \"EUR\"")
        }
        try section.integer("limit", into: &vouchers.limit, in: 1...1_000_000_000_000)
        try section.integer("lifetime_hours", into: &vouchers.lifetimeHours, in: 1...720)
        try section.integer("renew_below", into: &vouchers.renewBelow, in: 0...1_000_000_000_000)
        // Above the limit, or with a window as long as a voucher lives, a voucher just obtained would already call
        // for the next: the daemon would drain the instrument into escrow.
        guard vouchers.renewBelow <= vouchers.limit else { throw section.error("renew_below", "is at most limit") }
        try section.integer("renew_before_hours", into: &vouchers.renewBeforeHours, in: 0...719)
        guard vouchers.renewBeforeHours < vouchers.lifetimeHours else {
            throw section.error("renew_before_hours", "is less than lifetime_hours")
        }
    }
}
