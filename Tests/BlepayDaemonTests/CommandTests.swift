import BlepayDaemonStore
import Foundation
import GRDB
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

    /// A state file written by a newer blepay needs the operator (an older package put back over a newer one): it is
    /// left as it is, and the daemon stops before it enrolls or touches the bus.
    @Test func aStateFileFromANewerBlepayStopsWithOneLineAndExitCode78() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepayd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let state = directory.appendingPathComponent(DaemonStore.fileName).path
        _ = try DaemonStore(path: state)
        try DatabaseQueue(path: state).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('99 later')")
        }
        let file = directory.appendingPathComponent("customer.toml")
        try Data("""
            [ledger]
            public_key = "\(String(repeating: "ab", count: 32))"
            [device]
            state_directory = "\(directory.path)"
            """.utf8).write(to: file)
        let result = try run(["customer", "--config", file.path, "--bus", "unix:path=/nonexistent/bus"])
        #expect(result.status == 78, "\(result.output)")
        #expect(result.output.hasPrefix("blepayd: daemon.state-schema: store.newer-schema: \(state)"), "\(result.output)")
        #expect(result.output.split(separator: "\n").count == 1, "\(result.output)")
    }
}
