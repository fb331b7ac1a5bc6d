import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import BlepayLedgerServer
import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// `blepay-ledger` as an operator runs it: the audit's exit codes, a bad configuration file or TLS key, a clean stop,
/// and the signing key's rotation and the credential commands on a ledger that is serving.
@Suite struct CommandTests {
    static let ledger = BuiltProduct("blepay-ledger", overriddenBy: "BLEPAY_LEDGER")

    func run(_ arguments: [String]) throws -> (status: Int32, output: String) { try Self.ledger.run(arguments) }

    @Test func theAuditExitsZeroOnSoundBooksAndOneOnTamperedOnes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-audit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let storage = try SQLiteStorage(path: directory + "/ledger.sqlite", logger: testLogger)
        try await storage.migrate()
        let sound = try run(["audit", "--state-directory", directory])
        #expect(sound.status == 0 && sound.output.contains("the books are sound"), "\(sound.output)")

        try await storage.write { tx in
            try tx.run("INSERT INTO books (id, kind) VALUES ('instrument:forged', 'customer')", [])
            try tx.run("INSERT INTO balances (book, currency, posted, held) VALUES ('instrument:forged', 'EUR', 100, 0)", [])
        }
        try await storage.close()
        let tampered = try run(["audit", "--state-directory", directory])
        #expect(tampered.status == 1 && tampered.output.contains("instrument:forged"), "\(tampered.output)")
    }

    /// An audit pointed at a directory without a ledger (a typo, a wrong `--config`) says so and creates nothing:
    /// it once created an empty ledger there and found its books sound.
    @Test func theAuditOfNoLedgerFailsAndCreatesNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-audit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try run(["audit", "--state-directory", directory])
        #expect(result.status == 1)
        #expect(result.output == "blepay-ledger: storage.no-ledger: no ledger database at \(directory)/ledger.sqlite\n")
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// `systemctl reload`: once, SIGHUP's default action stopped a daemon outright.
    @Test func sighupReloadsTheLevelNamesWhatNeedsARestartAndNeverStopsTheLedger() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-hup-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/ledger.toml"
        func configure(_ text: String) throws {
            try Data("[ledger]\nstate_directory = \"\(directory)\"\n\(text)".utf8).write(to: URL(fileURLWithPath: file))
        }
        try configure("[server]\nport = 0\n")
        let systemd = try NotifyListener()
        let (process, pipe) = try Self.ledger.start(["serve", "--config", file], environment: systemd.environment())
        defer { if process.isRunning { process.terminate() } }
        try await systemd.next { $0 == "READY=1" }
        func reload() async throws {
            kill(process.processIdentifier, SIGHUP)
            try await systemd.next { $0 == "RELOADING=1" }
            try await systemd.next { $0 == "READY=1" }
        }
        try await reload()
        try configure("[server]\nport = 1\n[logging]\nlevel = \"debug\"\n")
        try await reload()
        try configure("[server]\nport = \"one\"\n")
        try await reload()
        #expect(process.isRunning)

        process.terminate()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = output.split(separator: "\n")
        #expect(lines.filter { $0.contains("notice blepay.ledger: configuration reloaded") }.count == 2, "\(output)")
        #expect(lines.contains { $0.contains("configuration reloaded applied=logging.level") })
        #expect(lines.contains { $0.contains("warning blepay.ledger: changed in the configuration, taking effect at the next restart: server.port") })
        #expect(lines.contains { $0.contains("error blepay.ledger: the configuration was not reloaded; nothing changed error=config.invalid: \(file): server.port is an integer") })
        // At debug now: the stop's own debug lines are written.
        #expect(lines.contains { $0.contains(" debug blepay.ledger: ") })
    }

    @Test func aBadConfigurationFileStopsWithOneLineAndExitCode78() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("[server]\nport = \"eighty\"\n".utf8).write(to: URL(fileURLWithPath: file))
        let result = try run(["serve", "--config", file])
        #expect(result.status == 78)
        #expect(result.output == "blepay-ledger: config.invalid: \(file): server.port is an integer from 0 to 65535\n")
    }

    @Test func keysAreRotatedInTwoStepsAndEachStepIsListed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-keys-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func lines(_ output: String) -> [[Substring]] { output.split(separator: "\n").map { $0.split(separator: " ") } }
        let first = try run(["keys", "--state-directory", directory])
        let original = lines(first.output)
        #expect(first.status == 0 && original.count == 1 && original[0].count == 3 && original[0][1] == "active", "\(first.output)")

        let rotated = try run(["rotate-key", "--state-directory", directory])
        let successor = lines(rotated.output)
        #expect(rotated.status == 0 && successor.count == 1 && successor[0][1] == "next", "\(rotated.output)")
        let again = try run(["rotate-key", "--state-directory", directory])
        #expect(again.status == 1 && again.output.hasPrefix("blepay-ledger: keys.successor-pending: "), "\(again.output)")
        let listed = try run(["keys", "--state-directory", directory])
        #expect(lines(listed.output) == original + successor)
        let keyFile = try FileManager.default.attributesOfItem(atPath: directory + "/ledger-key-\(successor[0][0]).key")
        #expect((keyFile[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)

        let unknown = try run(["activate-key", "--state-directory", directory, String(original[0][0])])
        #expect(unknown.status == 1 && unknown.output.hasPrefix("blepay-ledger: keys.not-successor: "), "\(unknown.output)")
        let activated = try run(["activate-key", "--state-directory", directory, String(successor[0][0])])
        #expect(activated.status == 0, "\(activated.output)")
        let after = lines(try run(["keys", "--state-directory", directory]).output)
        #expect(after.map { [$0[0], $0[1]] } == [[original[0][0], "retired"], [successor[0][0], "active"]])
    }

    /// `rotate-key` and `activate-key`, run beside `serve`, take effect in it without a restart. Having served, written
    /// and reloaded, the ledger has no libdispatch worker thread: its tasks and timers run on its event loops, so an
    /// idle ledger is not woken every second by the pool's monitor (6.8 wake-ups/s idle before, 1.0 after).
    @Test func aRunningLedgerPublishesAndActivatesARotatedKeyWithoutARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-serve-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (process, pipe) = try Self.ledger.start(["serve", "--state-directory", directory, "--port", "0"])
        defer { process.terminate() }
        var output = ""
        while output.firstMatch(of: /port=([0-9]+)/) == nil, process.isRunning {
            output += String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        }
        let port = try #require(output.firstMatch(of: /port=([0-9]+)/)?.1)
        let client = LedgerClient(baseURL: "http://127.0.0.1:\(port)", credentials: .none, logger: testLogger)
        let first = try await client.ledgerKey()

        let rotated = try await Self.ledger.run(["rotate-key", "--state-directory", directory])
        let successor = try #require(rotated.output.split(separator: " ").first.map(String.init))
        try await Self.poll { try await client.ledgerKeys().map(\.status) == ["active", "next"] }
        #expect(try await client.ledgerKey() == first)

        #expect(try await Self.ledger.run(["activate-key", "--state-directory", directory, successor]).status == 0)
        try await Self.poll { try await client.ledgerKey().keyId == successor }
        #expect(try await client.ledgerKeys().map(\.status) == ["retired", "active"])
        let threads = try threadNames(of: process.processIdentifier)
        #expect(!hasDispatchWorker(threads), "\(threads)")
    }

    /// Asks until `condition` holds, for at most 1 s: the ledger reloads its key files as their listing changes (it
    /// read them every 2 s before, so this failed most times).
    static func poll(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<10 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the running ledger did not take the rotation up")
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

    /// The credential commands work on the served ledger's database and answer with the admin API's JSON: what they
    /// do is in force for the next request.
    @Test func theCredentialCommandsIssueTokensListRevokeAndBlock() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let file = ledger.stateDirectory + "/ledger.toml"
            try Data("[storage]\nsqlite_path = \"\(try #require(ledger.storage.sqlitePath))\"\n[ledger]\nstate_directory = \"\(ledger.stateDirectory)\"\n".utf8)
                .write(to: URL(fileURLWithPath: file))
            func run<T: Decodable>(_ arguments: [String], as _: T.Type) async throws -> T {
                let result = try await Self.ledger.run(arguments + ["--config", file])
                #expect(result.status == 0, "\(arguments): \(result.output)")
                let json = try #require(result.output.split(separator: "\n").last.map(String.init))
                return try JSONDecoder().decode(T.self, from: Data(json.utf8))
            }
            let alice = try await ledger.customer(balance: 0)
            let cafe = try await ledger.merchant()

            let customers = try await run(["accounts", "--kind", "customer"], as: AccountList.self)
            #expect(customers.accounts.map(\.id) == [alice.account.id] && customers.next == nil)
            let devices = try await run(["devices", alice.account.id], as: DeviceList.self)
            #expect(devices.devices.map(\.id) == [alice.device.id] && devices.devices[0].revokedAt == nil)

            let token = try #require(try await run(["issue-token", alice.account.id], as: EnrollmentTokenResource.self).token)
            let tablet = try await ledger.admin.with(.bearer(token)).enroll(
                RegisterDevice(name: "tablet", signingKey: SigningKey().publicKey.bytes.hex, noiseKey: nil))
            #expect(tablet.accountId == alice.account.id)

            #expect(try await run(["revoke-device", alice.device.id], as: EnrolledDevice.self).revokedAt != nil)
            await #expect(throws: LedgerClientError.self) { try await alice.client.ownAccount() }
            #expect(try await ledger.client(tablet).ownAccount().id == alice.account.id)

            #expect(try await run(["block", cafe.account.id], as: AccountResource.self).blocked)
            await #expect(throws: LedgerClientError.self) { try await cafe.client.ownAccount() }
            #expect(try await run(["unblock", cafe.account.id], as: AccountResource.self).blocked == false)
            #expect(try await cafe.client.ownAccount().id == cafe.account.id)

            let unknown = try await Self.ledger.run(["revoke-device", "dev_unknown", "--config", file])
            #expect(unknown.status == 1 && unknown.output.contains("not-found"), "\(unknown.output)")
        }
    }
}
