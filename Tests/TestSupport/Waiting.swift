import Foundation

/// Bounded waits for the D-Bus test tiers: every wait names what it waits for and fails with `TimedOut`.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}

/// Runs `operation`, throwing `TimedOut` if it has not finished within `limit`.
public func within<T: Sendable>(
    _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask(operation: operation)
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut(what: what) }
        return first
    }
}

/// Waits (bounded) until `condition` holds for state that has no change stream, checking it every 10 ms.
public func eventually(
    _ what: String, within limit: Duration = .seconds(5), _ condition: @escaping @Sendable () -> Bool
) async throws {
    try await within(limit, what) {
        while !condition() { try await Task.sleep(for: .milliseconds(10)) }
    }
}

/// The elements of `stream` up to and including the first for which `done` (given all so far) holds.
public func collect<T: Sendable>(
    _ stream: AsyncStream<T>, within limit: Duration = .seconds(5), until done: @escaping @Sendable ([T]) -> Bool
) async throws -> [T] {
    try await within(limit, "elements of a stream") {
        var elements: [T] = []
        for await element in stream {
            elements.append(element)
            if done(elements) { return elements }
        }
        throw TimedOut(what: "more elements (the stream ended after \(elements.count))")
    }
}

/// The first `count` elements of `stream`.
public func first<T: Sendable>(_ count: Int, of stream: AsyncStream<T>) async throws -> [T] {
    try await collect(stream) { $0.count == count }
}

/// The exit status of `process`, waited for on a thread of its own for at most `limit`.
public func exitStatus(of process: Process, within limit: Duration) async throws -> Int32 {
    try await within(limit, "\(process.executableURL?.lastPathComponent ?? "a process") to exit") {
        try await onOwnThread {
            process.waitUntilExit()
            return process.terminationStatus
        }
    }
}
