import ArgumentParser
import BlepayConfiguration
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayService
import BlepayVersion
import DBusKit
import Foundation
import Logging
import Prometheus
import ServiceLifecycle

/// The daemons run on event-loop executors, so that an idle daemon sleeps.
@main
enum Main {
    static func main() {
        EventLoopExecutors.main { await Blepayd.main() }
    }
}

/// `blepayd customer` and `blepayd business`: the two daemons, run by systemd (`systemd/`).
struct Blepayd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blepayd",
        abstract: "blepay's daemons: BLE payments between a customer and a business, controlled over D-Bus.",
        version: BlepayVersion.line,
        subcommands: [Customer.self, Business.self])
}

struct DaemonOptions: ParsableArguments {
    @Option(help: "The configuration file (default: /etc/blepay/<role>.toml).")
    var config: String?

    @Option(help: "The bus for BlueZ and the control API: 'system', or a D-Bus address.")
    var bus = "system"

    /// Loads the configuration (exit 78 with one line if it cannot be used), listens on its metrics port (exit 1 with
    /// one line if it cannot), opens the daemon's context (exit 1 with one line if that fails; 78 if its state file
    /// cannot be migrated) and runs `daemon` until SIGTERM or SIGINT;
    /// SIGHUP reloads what can be reloaded.
    func run(_ role: DaemonConfiguration.Role, _ services: (DaemonContext) throws -> [any Service]) async throws {
        ReloadService.ignoreUntilRunning()
        let file = config ?? "/etc/blepay/\(role.rawValue).toml"
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(role, file: file)
        } catch {
            FileHandle.standardError.write(Data("blepayd: \(error)\n".utf8))
            throw ExitCode(78)
        }
        let environment = ProcessInfo.processInfo.environment
        let level = LogLevelSetting(LogLevelSetting.level(configured: configuration.logLevel, environment: environment))
        let logger = Logger.service("blepay.\(role.rawValue)", level: level)
        let registry = PrometheusCollectorRegistry()
        // Bound before anything else starts: a port in use ends the daemon before it can say READY=1.
        var metrics: [any Service] = []
        if configuration.metricsPort != 0 {
            do {
                metrics = [try await MetricsEndpoint.bind(port: configuration.metricsPort, registry: registry, logger: logger)]
            } catch {
                let reason = DaemonError(.metricsUnavailable, "cannot listen on 127.0.0.1:\(configuration.metricsPort): \(error)")
                FileHandle.standardError.write(Data("blepayd: \(reason)\n".utf8))
                throw ExitCode(1)
            }
        }
        let context: DaemonContext
        do {
            context = try await DaemonContext.open(
                configuration, bus: bus == "system" ? .system : .address(bus), logger: logger,
                metrics: PrometheusMetricsFactory(registry: registry))
        } catch {
            FileHandle.standardError.write(Data("blepayd: \(error)\n".utf8))
            // A state file this build cannot migrate needs the operator, not a restart.
            throw ExitCode(error.code == .stateSchema ? 78 : 1)
        }
        let group: ServiceGroup
        do {
            let reload = ReloadService(file: file, reloadable: ["logging.level"], notify: SystemdNotify(), logger: logger) {
                file throws(ConfigurationError) in
                let reloaded = try DaemonConfiguration.load(role, file: file)
                level.level = LogLevelSetting.level(configured: reloaded.logLevel, environment: environment)
            }
            group = ServiceGroup(
                services: [reload] + metrics + (try services(context)), gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger)
        } catch {
            FileHandle.standardError.write(Data("blepayd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        logger.info("running", metadata: ["daemon": "\(context)"])
        try await group.run()
    }
}

struct Customer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "customer", abstract: "Receive payment requests over BLE and accept or cancel them.")
    @OptionGroup var options: DaemonOptions
    func run() async throws { try await options.run(.customer) { CustomerDaemon.services($0) } }
}

struct Business: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "business", abstract: "Send payment requests to customers nearby over BLE.")
    @OptionGroup var options: DaemonOptions
    func run() async throws { try await options.run(.business) { try BusinessDaemon.services($0) } }
}
