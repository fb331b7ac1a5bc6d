import BlepayLedgerServer
import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// `blepay-ledger` as an operator runs it: the audit's exit codes, a bad configuration file or TLS key, and a clean
/// stop.
@Suite struct CommandTests {
    static let ledger = BuiltProduct("blepay-ledger", overriddenBy: "BLEPAY_LEDGER")

    func run(_ arguments: [String]) throws -> (status: Int32, output: String) { try Self.ledger.run(arguments) }

    @Test func theAuditExitsZeroOnSoundBooksAndOneOnTamperedOnes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-audit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sound = try run(["audit", "--state-directory", directory])
        #expect(sound.status == 0 && sound.output.contains("the books are sound"), "\(sound.output)")

        let storage = try SQLiteStorage(path: directory + "/ledger.sqlite", logger: testLogger)
        try await storage.write { tx in
            try tx.run("INSERT INTO books (id, kind) VALUES ('instrument:forged', 'customer')", [])
            try tx.run("INSERT INTO balances (book, currency, posted, held) VALUES ('instrument:forged', 'EUR', 100, 0)", [])
        }
        try await storage.close()
        let tampered = try run(["audit", "--state-directory", directory])
        #expect(tampered.status == 1 && tampered.output.contains("instrument:forged"), "\(tampered.output)")
    }

    @Test func aBadConfigurationFileStopsWithOneLineAndExitCode78() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("[server]\nport = \"eighty\"\n".utf8).write(to: URL(fileURLWithPath: file))
        let result = try run(["serve", "--config", file])
        #expect(result.status == 78)
        #expect(result.output == "blepay-ledger: config.invalid: \(file): server.port is an integer from 0 to 65535\n")
    }

    @Test func aTLSKeyFileThatCannotBeReadStopsServeWithOneLineAndExitCode78() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let certificate = try authority.issue()
        let file = (authority.directory as NSString).appendingPathComponent("ledger.toml")
        let missing = (authority.directory as NSString).appendingPathComponent("missing.key")
        try Data("""
            [tls]
            certificate_file = "\(certificate.certificateFile)"
            key_file = "\(missing)"
            """.utf8).write(to: URL(fileURLWithPath: file))
        let result = try run(["serve", "--config", file, "--state-directory", authority.directory + "/state", "--port", "0"])
        #expect(result.status == 78)
        #expect(result.output == "blepay-ledger: config.invalid: \(file): tls.key_file names \(missing), which is not a readable PEM private key\n")
    }

    @Test func serveStopsCleanlyOnSIGTERM() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-serve-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (process, pipe) = try Self.ledger.start(["serve", "--state-directory", directory, "--port", "0"])
        // Signalled only once it serves: before that, SIGTERM is not yet the service group's to handle.
        var output = ""
        while !output.contains("listening"), process.isRunning {
            output += String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        }
        process.terminate()
        output += String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(output)")
        #expect(!output.contains("error"), "\(output)")
    }
}
