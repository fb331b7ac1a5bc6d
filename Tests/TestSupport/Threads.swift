import Foundation

/// The names of a running process's threads (`/proc/PID/task/*/comm`, at most 15 characters: the end of a longer name).
public func threadNames(of pid: Int32) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").map {
        try String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
    }
}

/// Whether one of `names` is a worker of libdispatch's pool, named after its root queue (`com.apple.root.default-qos`
/// and the like); its manager thread, which serves signal sources, ends in `.overcommit`.
public func hasDispatchWorker(_ names: [String]) -> Bool {
    names.contains { $0.hasSuffix("-qos") }
}
