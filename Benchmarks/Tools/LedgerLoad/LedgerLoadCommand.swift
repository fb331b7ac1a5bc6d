import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging

/// Load for `make bench` (scripts/bench-ledger.sh): each subcommand prints one `bench:` line per measurement.
@main
struct LedgerLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "LedgerLoad",
        abstract: "Measures blepay-ledger's durable throughput and the disk's.",
        subcommands: [Payments.self, Settlements.self, RawSQLite.self])

    struct Payments: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "payments",
            abstract: "Complete payments over HTTP (create, then accept: executed and settled) at a fixed concurrency.")

        @Option(name: .customLong("url"), help: "A ledger process's base URL; repeat for several (load split round-robin).")
        var urls: [String]
        @Option(help: "The file holding the ledger's admin token.")
        var adminTokenFile: String
        @Option(help: "Timed payments.")
        var payments = 8_000
        @Option(help: "Untimed payments made first.")
        var warmUp = 500
        @Option(help: "Payments in flight at once.")
        var concurrency = 32
        @Option(help: "Customers paying (default: the concurrency).")
        var customers: Int?
        @Option(help: "Merchants asking.")
        var merchants = 1
        @Option(help: "The name printed on the bench line.")
        var label = "ledger"
        @Option(name: .customLong("server-pid"), help: "A ledger process whose CPU time to report; repeatable.")
        var serverPIDs: [Int32] = []

        func validate() throws {
            guard !urls.isEmpty else { throw ValidationError("give at least one --url") }
            guard payments > 0, warmUp >= 0, concurrency > 0, merchants > 0, customers ?? 1 > 0 else {
                throw ValidationError("--payments, --concurrency, --customers and --merchants are at least 1")
            }
        }

        func run() async throws {
            let token = try String(contentsOfFile: adminTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            try await PaymentLoad(
                urls: urls, adminToken: token, count: payments, warmUp: warmUp, concurrency: concurrency,
                customers: customers ?? concurrency, merchants: merchants, label: label, serverPIDs: serverPIDs
            ).run()
        }
    }

    struct Settlements: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "settlements",
            abstract: "Offline payments settled over HTTP in batches, as a business uploads them when back online.")

        @Option(help: "The ledger's base URL.") var url: String
        @Option(help: "The file holding the ledger's admin token.") var adminTokenFile: String
        @Option(help: "Payments settled.") var payments = 4_000
        @Option(help: "Payments per batch (the ledger takes at most 100).") var batch = 100
        @Option(help: "Batches in flight at once.") var concurrency = 4
        @Option(help: "Customers, each paying under a voucher of its own.") var customers = 32
        @Option(help: "The name printed on the bench line.") var label = "ledger"

        func validate() throws {
            guard payments > 0, (1...100).contains(batch), concurrency > 0, customers > 0 else {
                throw ValidationError("--payments, --concurrency and --customers are at least 1; --batch is 1 to 100")
            }
        }

        func run() async throws {
            let token = try String(contentsOfFile: adminTokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            try await SettlementLoad(
                url: url, adminToken: token, count: payments, batch: batch, concurrency: concurrency, customers: customers,
                label: label
            ).run()
        }
    }

    struct RawSQLite: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sqlite-raw",
            abstract: "Durable SQLite transactions per second on one connection: the disk's limit.")

        enum Synchronous: String, ExpressibleByArgument, CaseIterable {
            case full, normal
        }

        @Option(name: .customLong("dir"), help: "A directory on the disk to measure (a fresh database is made in it).")
        var directory: String
        @Option(help: "How long to measure.")
        var seconds = 3.0
        @Option(help: "full: durable at every commit; normal: only at checkpoints, for comparison.")
        var synchronous = Synchronous.full

        func validate() throws {
            guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds is a positive number") }
        }

        func run() throws {
            try RawSQLiteLoad(directory: directory, seconds: seconds, durable: synchronous == .full).run()
        }
    }
}

/// Runs `body` with an HTTP client pooled for `concurrency` requests in flight and a quiet logger, and shuts the
/// client down after, whether `body` threw or not.
func withLoadClient(
    concurrency: Int, readSeconds: Int64, _ body: (HTTPClient, Logger) async throws -> Void
) async throws {
    var logger = Logger(label: "blepay.ledger-load")
    logger.logLevel = .warning
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(32, concurrency)
    configuration.timeout = .init(connect: .seconds(10), read: .seconds(readSeconds))
    let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    do {
        try await body(http, logger)
    } catch {
        try? await http.shutdown()
        throw error
    }
    try await http.shutdown()
}

struct LoadError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
