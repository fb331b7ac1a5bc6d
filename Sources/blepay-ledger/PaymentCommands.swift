import ArgumentParser
import BlepayLedgerServer
import BlepayLedgerStore
import Foundation

/// The operator's reading of payments: `export` writes a merchant's payments as CSV or JSON, `payments` lists a
/// merchant's or an account's as a table, `payment` prints one as the API answers it. They read the configured
/// ledger's database directly, like the audit, and never create one.
extension Options {
    /// The configured ledger over its existing database: a database without a ledger is one line and exit 1.
    func existingServer() async throws -> LedgerServer {
        do {
            return try await server(creating: false).0
        } catch let error as StorageError where error.code == .noLedger {
            FileHandle.standardError.write(Data("blepay-ledger: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Runs `body` on the existing ledger; a refusal prints its code and message and exits 1.
    func reading(_ body: (LedgerServer) async throws -> Void) async throws {
        let server = try await existingServer()
        let result: Result<Void, any Error>
        do { result = .success(try await body(server)) } catch { result = .failure(error) }
        try await server.storage.close()
        if case .failure(let error) = result {
            FileHandle.standardError.write(Data("blepay-ledger: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// A time on the command line: a day (`YYYY-MM-DD`, its start in UTC) or milliseconds since 1970.
struct TimeArgument: ExpressibleByArgument {
    let milliseconds: UInt64

    init?(argument: String) {
        guard let milliseconds = PaymentExport.milliseconds(argument) else { return nil }
        self.milliseconds = milliseconds
    }
}

extension PaymentExport.Format: ExpressibleByArgument {}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export",
        abstract: "Write a merchant's payments, newest first, as CSV or JSON.",
        discussion: """
            --from and --to are a day (YYYY-MM-DD, its start in UTC) or milliseconds since 1970; --from is inclusive, \
            --to exclusive. A payment's time is its creation (online) or its settlement (offline).
            """)

    @OptionGroup var options: Options
    @Option(help: "The merchant account id.") var merchant: String
    @Option(help: "From this day or time on.") var from: TimeArgument?
    @Option(help: "Before this day or time.") var to: TimeArgument?
    @Option(help: "csv or json.") var format = PaymentExport.Format.csv

    func run() async throws {
        try await options.reading { server in
            try await server.export(merchant: merchant, from: from?.milliseconds, to: to?.milliseconds, format: format) { text in
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}

struct ListPayments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "payments",
        abstract: "List a merchant's payments or those an account paid, newest first, as a table.")

    @OptionGroup var options: Options
    @Option(help: "The merchant account id.") var merchant: String?
    @Option(help: "The paying (customer) account id.") var account: String?
    @Option(help: "At most this many (1 to 200).") var limit = 50
    @Option(help: "The page after this one (the previous table's last line).") var cursor: String?

    func validate() throws {
        guard merchant != nil || account != nil else { throw ValidationError("name a --merchant or an --account") }
    }

    func run() async throws {
        try await options.reading { server in
            print(try await server.paymentTable(merchant: merchant, account: account, limit: limit, cursor: cursor), terminator: "")
        }
    }
}

struct ShowPayment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "payment",
        abstract: "Print one payment as the API answers it (JSON).")

    @OptionGroup var options: Options
    @Argument(help: "The payment id.") var id: String
    @Option(help: "Whose payment of the id, when several merchants have one.") var merchant: String?

    func run() async throws {
        try await options.reading { server in print(try await server.paymentJSON(id, merchant: merchant)) }
    }
}
