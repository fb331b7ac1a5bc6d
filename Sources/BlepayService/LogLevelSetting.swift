import Logging
import Synchronization

/// The configured log level, shared by every logger of a process so that a reload changes it for all of them at
/// once. A logger whose level was set on it keeps its own (swift-log's rule that one logger's level is its own).
public final class LogLevelSetting: Sendable {
    private let raw: Atomic<Int>

    public init(_ level: Logger.Level) { raw = Atomic(Self.index(level)) }

    public var level: Logger.Level {
        get { Logger.Level.allCases[raw.load(ordering: .relaxed)] }
        set { raw.store(Self.index(newValue), ordering: .relaxed) }
    }

    private static func index(_ level: Logger.Level) -> Int { Logger.Level.allCases.firstIndex(of: level)! }
}

extension LogLevelSetting {
    /// The level a configuration names (`[logging] level`), unless `BLEPAY_LOG_LEVEL` in the environment overrides it.
    public static func level(configured: String, environment: [String: String]) -> Logger.Level {
        environment["BLEPAY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? Logger.Level(rawValue: configured) ?? .info
    }
}

extension Logger {
    /// A blepay service's logger: journal entries (or lines on standard error) under `label`, at the shared level.
    public static func service(_ label: String, level: LogLevelSetting) -> Logger {
        Logger(label: label) { JournalLogHandler(label: $0, level: level) }
    }
}
