import Foundation

/// Helpers the tests share: a seeded generator (a failing random case is replayed from its seed), hex for byte
/// vectors (reading it; writing it here serves the Noise tests, below `BlepayProtocol`'s `hex`), and the built
/// executables for the tests of their command lines.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Array where Element == UInt8 {
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let byte = UInt8(String(decoding: utf8[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self = bytes
    }
}

/// One of the package's executables as `swift build` left it (`.build/debug/<product>`, or the path an environment
/// variable names), for the tests of its command line: run as an operator would, its output and error on one pipe.
public struct BuiltProduct: Sendable {
    public let path: String

    public init(_ product: String, overriddenBy variable: String) {
        path = ProcessInfo.processInfo.environment[variable]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../.build/debug/\(product)").standardized.path
    }

    /// A program at `path`.
    public init(path: String) { self.path = path }

    /// Starts it with `arguments`, and `environment` added to this process's; what it prints comes through the pipe.
    public func start(_ arguments: [String], environment: [String: String] = [:]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        return (process, pipe)
    }

    /// Runs it to its end on a thread of its own (`onOwnThread`).
    public func run(_ arguments: [String], input: String? = nil) async throws -> (status: Int32, output: String) {
        try await onOwnThread { try self.run(arguments, input: input) }
    }

    /// Runs it to its end, `input` on its standard input: its exit status and all it printed.
    public func run(_ arguments: [String], input: String? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let stdin = Pipe()
        if input != nil { process.standardInput = stdin }
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}

/// Runs `body` on a thread of its own, so that what it waits for (a process, a sleep) holds up none of the test's
/// tasks: a daemon or ledger served in the test process answers on those.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// This test binary run again for the one test `filter` names, which `environment` enables, killed with `SIGKILL`
/// after `killAfter` seconds (nil: run to its end); its standard output. Blocks: call it `onOwnThread`.
public func runTestChild(_ filter: String, environment: [String: String], killAfter: Double?) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["--testing-library", "swift-testing", "--filter", filter]
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    if let killAfter {
        Thread.sleep(forTimeInterval: killAfter)
        kill(process.processIdentifier, SIGKILL)
    }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: output, as: UTF8.self)
}
