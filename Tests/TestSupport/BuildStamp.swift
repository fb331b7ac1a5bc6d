import Foundation

/// What blepay's binaries print for `--version`, as this checkout should stamp them: `VERSION` and the commit.
public enum BuildStamp {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// The release in `VERSION`.
    public static func version() throws -> String {
        try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `git describe` of the checkout, as the build stamps it; `unknown` outside one.
    public static func commit() throws -> String {
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        git.arguments = ["-C", root.path, "describe", "--always", "--dirty", "--abbrev=12", "--exclude", "*"]
        let pipe = Pipe()
        git.standardOutput = pipe
        git.standardError = FileHandle.nullDevice
        try git.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        git.waitUntilExit()
        return git.terminationStatus == 0 ? output.trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
    }

    /// The whole `--version` line.
    public static func line() throws -> String { "blepay \(try version()) (commit \(try commit()))" }
}
