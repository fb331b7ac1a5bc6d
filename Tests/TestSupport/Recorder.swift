import Synchronization

/// Everything a stream yields, kept so that a test can look for what it expects in any order.
public final class Recorder<Element: Sendable>: Sendable {
    private final class Elements: Sendable {
        let all = Mutex<[Element]>([])
    }

    private let elements = Elements()
    private let task: Task<Void, Never>

    public init(_ stream: AsyncStream<Element>) {
        let elements = elements
        task = Task {
            for await element in stream { elements.all.withLock { $0.append(element) } }
        }
    }

    deinit { task.cancel() }

    public var all: [Element] { elements.all.withLock { $0 } }

    /// The first element so far or to come that `match` maps to a value.
    @discardableResult
    public func first<T: Sendable>(
        _ what: String, within limit: Duration = .seconds(5), _ match: @escaping @Sendable (Element) -> T?
    ) async throws -> T {
        let elements = elements
        return try await within(limit, what) {
            while true {
                if let value = elements.all.withLock({ $0.lazy.compactMap(match).first }) { return value }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Waits until an element for which `predicate` holds has come.
    public func contains(
        _ what: String, within limit: Duration = .seconds(5), _ predicate: @escaping @Sendable (Element) -> Bool
    ) async throws {
        try await first(what, within: limit) { predicate($0) ? () : nil }
    }
}
