import Foundation
import TestSupport
import Testing

/// The users the units run as, on this host as the install creates them (systemd-sysusers): the ledger, run as its
/// unit's user, keeps its signing key and admin token where the daemons, run as theirs with their groups, cannot
/// read them; and the ledger's user is in none of the daemons' groups, so it can neither call them nor reach bluetoothd.
@Suite struct PrivilegeTests {
    static let units = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd")
        .standardized

    /// `User=`, `Group=` and `SupplementaryGroups=` of a unit.
    static func identity(_ unit: String) throws -> (user: String, group: String, groups: [String]) {
        let text = try String(contentsOf: units.appendingPathComponent(unit), encoding: .utf8)
        func value(_ key: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        let user = try #require(value("User"), "\(unit) names its user")
        return (user, value("Group") ?? user, (value("SupplementaryGroups") ?? "").split(separator: " ").map(String.init))
    }

    /// Runs `command` as `user`:`group` with `groups`; its exit status and output.
    static func run(as identity: (user: String, group: String, groups: [String]), _ command: [String]) throws
        -> (status: Int32, output: String)
    {
        let groups = identity.groups.isEmpty ? ["--clear-groups"] : ["--groups=\(identity.groups.joined(separator: ","))"]
        return try BuiltProduct(path: "/usr/bin/setpriv").run(
            ["--reuid=\(identity.user)", "--regid=\(identity.group)"] + groups + command)
    }

    /// The groups `user` belongs to on this host.
    static func groups(of user: String) throws -> [String] {
        try BuiltProduct(path: "/usr/bin/id").run(["-Gn", user]).output.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    @Test func theDaemonsCannotReadTheLedgersSecrets() async throws {
        let ledger = try Self.identity("blepay-ledger.service")
        try #require(getpwnam(ledger.user) != nil, "the install creates \(ledger.user) (systemd-sysusers)")
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-privilege-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: parent) }
        let owner = try #require(getpwnam(ledger.user)).pointee
        chown(parent.path, owner.pw_uid, owner.pw_gid)
        let state = parent.appendingPathComponent("state").path
        // A copy the ledger's user may run wherever the build is.
        let binary = parent.appendingPathComponent("blepay-ledger").path
        try FileManager.default.copyItem(atPath: BuiltProduct("blepay-ledger", overriddenBy: "BLEPAY_LEDGER").path, toPath: binary)
        let groups = ledger.groups.isEmpty ? ["--clear-groups"] : ["--groups=\(ledger.groups.joined(separator: ","))"]
        let (server, _) = try BuiltProduct(path: "/usr/bin/setpriv").start(
            ["--reuid=\(ledger.user)", "--regid=\(ledger.group)"] + groups
                + [binary, "serve", "--state-directory", state, "--port", "0"])
        // SIGKILL, and the wait on a thread of its own: the child may have inherited a mask that blocks SIGTERM.
        nonisolated(unsafe) let running = server
        defer { kill(running.processIdentifier, SIGKILL) }
        let secrets = ["ledger-signing.key", "admin.token"].map { "\(state)/\($0)" }
        for _ in 0..<100 where !secrets.allSatisfy(FileManager.default.fileExists(atPath:)) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try Self.run(as: ledger, ["cat"] + secrets).status == 0, "the ledger reads its own secrets")
        for unit in ["blepay-customer.service", "blepay-business.service"] {
            let daemon = try Self.identity(unit)
            let daemonGroups = try Self.groups(of: daemon.user)
            let attempt = try Self.run(as: (daemon.user, daemon.group, daemonGroups + daemon.groups), ["cat"] + secrets)
            #expect(attempt.status != 0, "\(unit) read the ledger's secrets")
        }
        kill(running.processIdentifier, SIGKILL)
        try await onOwnThread { running.waitUntilExit() }
    }

    @Test func theLedgersUserIsInNoneOfTheDaemonsGroups() throws {
        let ledger = try Self.identity("blepay-ledger.service")
        try #require(getpwnam(ledger.user) != nil, "the install creates \(ledger.user) (systemd-sysusers)")
        let ledgerGroups = Set(try Self.groups(of: ledger.user) + [ledger.group] + ledger.groups)
        for unit in ["blepay-customer.service", "blepay-business.service"] {
            let daemon = try Self.identity(unit)
            #expect(daemon.user != ledger.user)
            #expect(ledgerGroups.isDisjoint(with: [daemon.group, "bluetooth"] + daemon.groups), "\(ledgerGroups)")
        }
    }
}
