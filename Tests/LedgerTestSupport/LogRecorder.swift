import Logging
import Synchronization

/// Every line logged through `logger`, as "level: message key=value …" (metadata sorted by key).
public final class LogRecorder: Sendable {
    private let recorded = Mutex<[String]>([])

    public init() {}

    public var lines: [String] { recorded.withLock { $0 } }

    public var logger: Logger {
        Logger(label: "blepay.test") { _ in Handler(recorder: self) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let pairs = metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }
            let line = (["\(event.level): \(event.message)"] + pairs.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
            recorder.recorded.withLock { $0.append(line) }
        }
    }
}
