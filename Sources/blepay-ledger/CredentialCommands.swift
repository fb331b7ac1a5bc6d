import ArgumentParser
import BlepayLedgerServer
import Foundation

/// The operator's credential commands. Each runs one admin operation on the configured ledger's database and
/// prints the JSON answer the admin API gives; a refusal prints its code and message and exits 1.
protocol CredentialCommand: AsyncParsableCommand {
    var options: Options { get }
    var command: Administration { get }
}

extension CredentialCommand {
    func run() async throws {
        let server = try await options.server().0
        let result: Result<String, any Error>
        do { result = .success(try await server.administer(command)) } catch { result = .failure(error) }
        try await server.storage.close()
        switch result {
        case .success(let json): print(json)
        case .failure(let error):
            FileHandle.standardError.write(Data("blepay-ledger: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct ListAccounts: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "accounts", abstract: "List accounts by id, a page at a time.")

    @OptionGroup var options: Options
    @Option(help: "Only customer or merchant accounts.") var kind: String?
    @Option(help: "At most this many (1 to 500).") var limit = 100
    @Option(help: "The page after this account id (the previous page's next).") var after: String?

    var command: Administration { .accounts(kind: kind, limit: limit, after: after) }
}

struct ListDevices: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "devices", abstract: "List an account's devices, revoked ones too.")

    @OptionGroup var options: Options
    @Argument(help: "The account id.") var account: String

    var command: Administration { .devices(account: account) }
}

struct IssueToken: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "issue-token",
        abstract: "Issue a fresh enrollment token for an account: it enrolls one device until it expires.")

    @OptionGroup var options: Options
    @Argument(help: "The account id.") var account: String

    var command: Administration { .issueToken(account: account) }
}

struct RevokeDevice: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "revoke-device",
        abstract: "Revoke a device for good: its requests are refused and its key is on the deny list.")

    @OptionGroup var options: Options
    @Argument(help: "The device id.") var device: String

    var command: Administration { .revoke(device: device) }
}

struct BlockAccount: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "block",
        abstract: "Block an account: its devices are refused, a merchant's payments too, until unblocked.")

    @OptionGroup var options: Options
    @Argument(help: "The account id.") var account: String

    var command: Administration { .block(account: account, blocked: true) }
}

struct UnblockAccount: CredentialCommand {
    static let configuration = CommandConfiguration(commandName: "unblock", abstract: "Unblock an account.")

    @OptionGroup var options: Options
    @Argument(help: "The account id.") var account: String

    var command: Administration { .block(account: account, blocked: false) }
}
