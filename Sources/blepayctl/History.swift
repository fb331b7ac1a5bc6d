import ArgumentParser
import BlepayControl
import BlepayDaemonConfiguration
import BlepayProtocol
import DBusKit
import FoundationEssentials

struct Payments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "payments",
        abstract: "List the payments in the daemon's history, newest first.",
        discussion: "The history outlives restarts; ended payments stay for the configuration's history.retention_days.")
    @Option(help: "Only payments since then: a date (2026-11-01, UTC), a duration back from now (2h, 7d) or ms since 1970.")
    var since: String?
    @Option(help: "Only payments with this status (finished, failed, settled, …).") var status: String?
    @Option(help: "At most this many payments.") var limit: Int?
    @OptionGroup var role: RoleOption
    @OptionGroup var global: Global

    func run() async throws {
        if let limit, limit < 1 { throw ValidationError("--limit is at least 1") }
        var filter: [String: DBusValue] = [:]
        if let since { filter["since"] = .uint64(try Self.milliseconds(since, now: Date())) }
        if let status { filter["status"] = .string(status) }
        let control = try await global.connect()
        let daemon = try await role.role(control)
        var remaining = limit ?? Int.max
        repeat {
            filter["limit"] = .uint32(UInt32(min(remaining, 500)))
            let reply = try await control.call(daemon, "ListHistory", [.stringDictionary(filter)])
            let payments = try reply.arguments[0].decode([DBusValue].self)
            for value in payments { control.print(try ControlPayment(dbus: value)) }
            remaining -= payments.count
            let cursor = try reply.arguments[1].decode(String.self)
            guard !cursor.isEmpty else { break }
            filter["cursor"] = .string(cursor)
        } while remaining > 0
    }

    /// `--since` as ms since 1970.
    static func milliseconds(_ text: String, now: Date) throws -> UInt64 {
        if let ms = UInt64(text) { return ms }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day()) {
            return UInt64(date.timeIntervalSince1970 * 1000)
        }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count >= 0,
            count * unit * 1000 <= now.timeIntervalSince1970 * 1000
        else { throw ValidationError("--since is a date (2026-11-01), a duration (2h, 7d) or ms since 1970, not \(text)") }
        return UInt64((now.timeIntervalSince1970 - count * unit) * 1000)
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show",
        abstract: "Show a payment from the daemon's history: its events, its refunds, and its receipt verified.",
        discussion: """
            The receipt is verified with the ledger public keys of the daemon's configuration file. Exit code 5: \
            the receipt's ledger signature does not verify. A configuration that cannot be read leaves it not \
            verified (exit code 0).
            """)
    @Argument(help: "The payment id.") var paymentID: String
    @Option(help: "The daemon's configuration file, for the ledger's public keys (default /etc/blepay/<role>.toml).")
    var config: String?
    @OptionGroup var role: RoleOption
    @OptionGroup var global: Global

    func run() async throws {
        let control = try await global.connect()
        let daemon = try await role.role(control)
        let reply = try await control.call(daemon, "GetPayment", [.string(paymentID)]).arguments
        let payment = try ControlPayment(dbus: reply[0])
        let refunds = try reply[2].decode([DBusValue].self).map { try ControlEntry(dbus: $0) }
        let keys = ReceiptCheck.keys(configuration: config ?? "/etc/blepay/\(daemon.rawValue).toml", role: daemon)
        let check = ReceiptCheck(payment, keys: keys)
        let refundChecks = refunds.map { ReceiptCheck(refund: $0, of: payment.paymentID, keys: keys) }
        let line = ShowLine(
            payment: payment, events: try reply[1].decode([DBusValue].self).map { try ControlEntry(dbus: $0) },
            refunds: refunds, receiptCheck: check.text, refundReceiptChecks: refundChecks.map(\.text))
        control.print(line)
        if !check.verified || refundChecks.contains(where: { !$0.verified }) { throw ExitCode(5) }
    }
}

/// What `show` says of a payment's receipt, or of a refund's: verified with the ledger's keys, pending (the ledger has
/// not signed it yet), or not verified, and why.
struct ReceiptCheck {
    let text: String
    /// False only when the ledger's signature was checked and does not verify.
    let verified: Bool

    /// The ledger keys of the daemon's configuration file, or why they cannot be had.
    static func keys(configuration file: String, role: DaemonConfiguration.Role) -> Result<TrustedLedgerKeys, any Error> {
        Result { TrustedLedgerKeys(try DaemonConfiguration.load(role, file: file).ledgerPublicKeys) }
    }

    init(_ payment: ControlPayment, keys: Result<TrustedLedgerKeys, any Error>) {
        guard let encoded = payment.details.receipt else { self.init(text: "none", verified: true); return }
        guard let bytes = Data(base64Encoded: encoded), let receipt = try? Receipt(encoded: Array(bytes)),
            receipt.paymentID.description == payment.paymentID
        else { self.init(text: "does not verify (not a receipt of this payment)", verified: false); return }
        guard receipt.status == .settled, let keyID = receipt.ledgerKeyID else {
            self.init(text: "pending settlement (not signed by the ledger yet)", verified: true)
            return
        }
        self.init(keyID, keys) { receipt.isSigned(trusting: $0) }
    }

    init(refund: ControlEntry, of paymentID: String, keys: Result<TrustedLedgerKeys, any Error>) {
        guard let encoded = refund.details.receipt, let bytes = Data(base64Encoded: encoded),
            let receipt = try? RefundReceipt(encoded: Array(bytes)), receipt.refundID == refund.name,
            receipt.paymentID.description == paymentID
        else { self.init(text: "does not verify (not a receipt of this refund)", verified: false); return }
        self.init(receipt.ledgerKeyID, keys) { (try? receipt.verify(trusting: $0)) != nil }
    }

    private init(text: String, verified: Bool) {
        self.text = text
        self.verified = verified
    }

    private init(
        _ keyID: FixedBytes<Bytes8>, _ keys: Result<TrustedLedgerKeys, any Error>, _ isSigned: (TrustedLedgerKeys) -> Bool
    ) {
        switch keys {
        case .failure(let error): (text, verified) = ("not verified (\(error))", true)
        case .success(let keys):
            (text, verified) = isSigned(keys)
                ? ("verified (ledger key \(keyID))", true) : ("does not verify (ledger key \(keyID))", false)
        }
    }
}

/// A payment as `show` prints it: the payment's line, then each event (time, kind, details), each refund with its
/// receipt's check, and the payment receipt's check.
struct ShowLine: OutputLine {
    let payment: ControlPayment
    let events: [ControlEntry]
    let refunds: [ControlEntry]
    let receiptCheck: String
    let refundReceiptChecks: [String]

    private enum CodingKeys: String, CodingKey {
        case payment, events, refunds
        case receiptCheck = "receipt_check"
        case refundReceiptChecks = "refund_receipt_checks"
    }

    var text: String {
        let events = events.map { event in
            let time = UInt64(event.label).map { Date(timeIntervalSince1970: Double($0) / 1000).formatted(.iso8601) } ?? event.label
            return "  \(time)  \(event.name)  \(event.detailsText)"
        }
        let refunds = zip(refunds, refundReceiptChecks).map { refund, check in "  refund  \(refund.text)\n    receipt: \(check)" }
        return ([payment.text] + events + refunds + ["receipt: \(receiptCheck)"]).joined(separator: "\n")
    }
}
