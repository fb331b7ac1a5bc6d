import BlepayConfiguration
import Foundation
import Glibc
import Logging

/// Logs as systemd's journal takes them: under systemd (`$JOURNAL_STREAM` names this process's standard error),
/// one datagram per entry to the journal's socket in its native protocol, with the syslog priority of the level
/// and each metadata key as a field of its own (`payment` → `BLEPAY_PAYMENT`, so `journalctl BLEPAY_PAYMENT=…`
/// finds a payment's lines); anywhere else, one line of text per entry on standard error. Values of keys that name a
/// secret are never written.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let identifier: String
    private let setting: LogLevelSetting
    private let sink: JournalSink
    private var ownLevel: Logger.Level?

    public init(label: String, level: LogLevelSetting, sink: JournalSink = .standard) {
        identifier = label
        setting = level
        self.sink = sink
    }

    public var logLevel: Logger.Level {
        get { ownLevel ?? setting.level }
        set { ownLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let given = event.metadata { merged.merge(given) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { key, value in
            (key, Self.isSecret(key) ? "(redacted)" : "\(value)")
        }
        sink.write(JournalEntry(
            priority: Self.priority(event.level), identifier: identifier, message: "\(event.message)", fields: fields,
            file: event.file, line: event.line, function: event.function))
    }

    /// Metadata keys whose values are never logged, whatever a caller passes.
    static let secretKeys = ["secret", "token", "password", "cvc", "card_number"]
    private static let secretKeyBytes = secretKeys.map { Array($0.utf8) }

    /// Whether `key` names a secret, its lower-cased bytes searched for each of `secretKeys` by a plain loop: the
    /// generic searches (Foundation's with a locale, the standard library's over any collection) cost more than the
    /// rest of an entry.
    static func isSecret(_ key: String) -> Bool {
        let lowered = Array(key.lowercased().utf8)
        return secretKeyBytes.contains { secret in
            lowered.count >= secret.count
                && (0...lowered.count - secret.count).contains { lowered[$0..<$0 + secret.count].elementsEqual(secret) }
        }
    }

    /// syslog's priorities, as `journalctl -p` filters them.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

/// One journal entry before it is written.
public struct JournalEntry: Sendable {
    let priority: Int
    let identifier: String
    let message: String
    let fields: [(String, String)]
    let file: String
    let line: UInt
    let function: String

    /// The native protocol's datagram: `KEY=value` lines, or for a value with a newline the key, a newline, the
    /// value's length as 64-bit little endian and the value.
    var datagram: [UInt8] {
        var bytes: [UInt8] = []
        func add(_ key: String, _ value: String) {
            bytes += Array(key.utf8)
            if value.contains("\n") {
                let utf8 = Array(value.utf8)
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(utf8.count).littleEndian) { bytes += $0 }
                bytes += utf8
            } else {
                bytes.append(UInt8(ascii: "="))
                bytes += Array(value.utf8)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        add("MESSAGE", message)
        add("PRIORITY", "\(priority)")
        add("SYSLOG_IDENTIFIER", identifier)
        add("CODE_FILE", file)
        add("CODE_LINE", "\(line)")
        add("CODE_FUNC", function)
        for (key, value) in fields { add(Self.fieldName(key), value) }
        return bytes
    }

    /// A line for a terminal or a file, or (`prefixed`) for the journal through standard error, which reads the
    /// priority from a `<N>` prefix.
    func text(prefixed: Bool, at time: Date = Date()) -> String {
        let metadata = fields.isEmpty ? "" : " " + fields.map { "\($0)=\($1)" }.joined(separator: " ")
        let head = prefixed ? "<\(priority)>" : "\(Self.timestamp(time)) \(Self.levels[priority] ?? "debug") "
        return "\(head)\(identifier): \(message)\(metadata)\n"
    }

    /// `2026-12-01T04:44:07Z`: the time in UTC to the second, as ISO 8601 writes it. By the C library, for what
    /// Foundation's formatter costs each line.
    static func timestamp(_ time: Date) -> String {
        var seconds = time_t(time.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static let levels = [2: "critical", 3: "error", 4: "warning", 5: "notice", 6: "info", 7: "debug"]

    /// `payment-id` → `BLEPAY_PAYMENT_ID`: the journal's field names are upper case letters, digits and `_`.
    static func fieldName(_ key: String) -> String {
        "BLEPAY_" + String(key.uppercased().map { $0.isLetter && $0.isASCII || $0.isNumber ? $0 : "_" })
    }
}

/// Where entries go: the journal's socket when standard error is the journal, standard error otherwise.
public final class JournalSink: Sendable {
    private let socketPath: String?

    /// This process's: the journal if systemd connected standard error to it (`$JOURNAL_STREAM`).
    public static let standard = JournalSink(environment: ProcessInfo.processInfo.environment)

    init(environment: [String: String], socketPath: String = "/run/systemd/journal/socket") {
        self.socketPath = Self.standardErrorIsJournal(environment["JOURNAL_STREAM"]) ? socketPath : nil
    }

    /// Entries to the journal socket at `socketPath` (tests stand one in).
    public init(socketPath: String) { self.socketPath = socketPath }

    func write(_ entry: JournalEntry) {
        // A journal that does not take the entry (not running, or the entry too large) gets it as a line.
        if let socketPath, UnixDatagram.send(entry.datagram, to: socketPath) { return }
        let line = Array(entry.text(prefixed: socketPath != nil).utf8)
        _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// `$JOURNAL_STREAM` is `device:inode` of the stream systemd connected; it is ours only if standard error is it.
    private static func standardErrorIsJournal(_ stream: String?) -> Bool {
        guard let parts = stream?.split(separator: ":"), parts.count == 2,
            let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
