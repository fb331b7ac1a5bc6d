import Foundation
import Testing
import TestSupport

/// Every binary names blepay's version and the commit it was built from.
@Suite struct VersionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// `git describe` of the checkout, as the build stamps it; `unknown` outside one.
    static func commit() throws -> String {
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

    @Test(arguments: ["blepayd": "BLEPAYD", "blepayctl": "BLEPAYCTL", "blepay-ledger": "BLEPAY_LEDGER",
        "blepay-loopback": "BLEPAY_LOOPBACK"])
    func versionNamesTheReleaseAndTheCommit(product: String, variable: String) throws {
        let version = try String(contentsOf: Self.root.appendingPathComponent("VERSION"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let result = try BuiltProduct(product, overriddenBy: variable).run(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "blepay \(version) (commit \(try Self.commit()))\n")
        #expect(version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil)
    }
}
