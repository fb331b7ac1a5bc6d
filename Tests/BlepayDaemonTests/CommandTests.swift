import Foundation
import TestSupport
import Testing

/// `blepayd` as systemd runs it: a configuration it cannot use stops it before it touches anything, with one line
/// naming the file, the key and why, and exit code 78 (EX_CONFIG: systemd does not restart it).
@Suite struct CommandTests {
    static let blepayd = BuiltProduct("blepayd", overriddenBy: "BLEPAYD")

    func run(_ arguments: [String]) throws -> (status: Int32, output: String) { try Self.blepayd.run(arguments) }

    @Test(arguments: [
        ("customer", "[bluetooth]\nadapter = \"bt0\"\n", "bluetooth.adapter is an adapter name such as \"hci0\""),
        ("business", "[bluetooth]\nadapter = 7\n", "bluetooth.adapter is a non-empty string"),
        ("customer", "[bluetooth\n", nil),
    ])
    func aBadConfigurationFileStopsWithOneLineAndExitCode78(role: String, text: String, reason: String?) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("blepayd-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        // The bus is one nobody serves: the daemon must stop before it looks for one.
        let result = try run([role, "--config", file, "--bus", "unix:path=/nonexistent/bus"])
        #expect(result.status == 78)
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 1, "\(result.output)")
        #expect(result.output.hasPrefix("blepayd: config.invalid: \(file): "), "\(result.output)")
        if let reason { #expect(result.output == "blepayd: config.invalid: \(file): \(reason)\n") }
    }

    @Test func aMissingConfigurationFileIsNamed() throws {
        let file = "/nonexistent/blepay/customer.toml"
        let result = try run(["customer", "--config", file, "--bus", "unix:path=/nonexistent/bus"])
        #expect(result.status == 78)
        #expect(result.output.hasPrefix("blepayd: config.") && result.output.contains(file), "\(result.output)")
        #expect(result.output.split(separator: "\n").count == 1, "\(result.output)")
    }
}
