import ArgumentParser
import BlepayConfiguration
import BlepayLedgerServer
import BlepayService
import BlepayVersion
import Foundation
import Logging
import ServiceLifecycle

/// The ledger runs on event-loop executors, as the daemons do, so that an idle ledger sleeps.
@main
enum Main {
    static func main() {
        EventLoopExecutors.main { await BlepayLedgerCommand.main() }
    }
}

/// `blepay-ledger serve` runs the reference ledger; `blepay-ledger audit` checks its books; `keys`, `rotate-key` and
/// `activate-key` rotate its signing key; the credential commands (`accounts`, `devices`, `issue-token`,
/// `revoke-device`, `block`, `unblock`) are the operator's, and so are the payment commands (`export`, `payments`,
/// `payment`).
struct BlepayLedgerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blepay-ledger",
        abstract: "blepay's reference payment backend: accounts, instruments, payments, pre-authorizations, settlement.",
        version: BlepayVersion.line,
        subcommands: [Serve.self, Audit.self, Keys.self, RotateKey.self, ActivateKey.self, ListAccounts.self, ListDevices.self,
            IssueToken.self, RevokeDevice.self, BlockAccount.self, UnblockAccount.self, Export.self, ListPayments.self,
            ShowPayment.self],
        defaultSubcommand: Serve.self)
}

struct Options: ParsableArguments {
    @Option(help: "The configuration file (TOML); without one, the defaults.")
    var config: String?

    @Option(help: "Overrides [ledger] state_directory.")
    var stateDirectory: String?

    @Option(help: "Overrides [server] port.")
    var port: Int?

    func load() throws -> LedgerConfiguration {
        var configuration = try configured {
            try config.map { file throws(ConfigurationError) in try LedgerConfiguration.load(file: file) } ?? LedgerConfiguration()
        }
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        if let port { configuration.port = port }
        return configuration
    }

    /// The configured ledger over its opened database; unless `creating`, one that exists already. The logger's
    /// level is shared with every logger made from it, for a reload to change.
    func server(creating: Bool = true) async throws -> (LedgerServer, Logger, LogLevelSetting) {
        let configuration = try load()
        let level = LogLevelSetting(
            LogLevelSetting.level(configured: configuration.logLevel, environment: ProcessInfo.processInfo.environment))
        let logger = Logger.service("blepay.ledger", level: level)
        let storage = try await LedgerServer.openStorage(configuration, creating: creating, logger: logger)
        return (try LedgerServer(configuration: configuration, storage: storage, logger: logger), logger, level)
    }
}

/// `body`'s result; a configuration it cannot use is one line naming the file, key and reason, and EX_CONFIG.
func configured<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as ConfigurationError {
        FileHandle.standardError.write(Data("blepay-ledger: \(error)\n".utf8))
        throw ExitCode(78)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the ledger's HTTP API.")

    @OptionGroup var options: Options

    func run() async throws {
        ReloadService.ignoreUntilRunning()
        let (server, logger, level) = try await options.server()
        let configuration = server.configuration
        let notify = SystemdNotify()
        let scheme = configuration.servesTLS ? "https" : "http"
        let application = try configured {
            try server.application(configurationFile: options.config ?? "(no configuration file)", logger: logger) { port in
                logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)",
                    "scheme": "\(scheme)", "storage": "\(configuration.backend.rawValue)"])
                notify.ready(status: "listening on \(configuration.host) port \(port) (\(scheme))")
            }
        }
        let reload = ReloadService(file: options.config, reloadable: ["logging.level"], notify: notify, logger: logger) {
            file throws(ConfigurationError) in
            let reloaded = try LedgerConfiguration.load(file: file)
            level.level = LogLevelSetting.level(configured: reloaded.logLevel, environment: ProcessInfo.processInfo.environment)
        }
        let group = ServiceGroup(services: [reload, application], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        let watchdog = Task { await notify.keepAlive() }
        try await group.run()
        watchdog.cancel()
        notify.stopping()
        try await server.storage.close()
    }
}

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "audit",
        abstract: "Check that every transfer balances and every payment has the postings its status implies.",
        discussion: "Exits 0 when the books are sound, 1 with one line per problem when not.")

    @OptionGroup var options: Options

    func run() async throws {
        let server = try await options.existingServer()
        let problems = try await server.audit()
        try await server.storage.close()
        for problem in problems { print("audit: \(problem)") }
        guard problems.isEmpty else { throw ExitCode(1) }
        print("audit: the books are sound")
    }
}
