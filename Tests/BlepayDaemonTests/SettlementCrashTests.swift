@testable import BlepayDaemon
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import Foundation
import LedgerTestSupport
import Logging
import TestSupport
import Testing

/// The business, then the ledger, killed (`SIGKILL`) at random points between keeping offline payments and the
/// ledger's answer to their settlement, against a real ledger (HTTP, SQLite): once a last run finishes, every payment
/// is settled exactly once, the merchant is credited each total once, and the ledger's books are sound.
@Suite(.timeLimit(.minutes(15))) struct SettlementCrashTests {
    static let childVariable = "BLEPAY_SETTLEMENT_CRASH_CHILD"
    static let ledgerProduct = BuiltProduct("blepay-ledger", overriddenBy: "BLEPAY_LEDGER")
    static let kills = 600
    static let ledgerKills = 200

    /// Signed pairs for `payments` offline payments, each the next use of one voucher, written where the child
    /// reads them; the child's environment and each payment's total.
    static func prepare(_ ledger: RunningLedger, payments: Int, merchant: RunningLedger.Party) async throws
        -> (environment: [String: String], totals: [String: UInt64])
    {
        let customer = try await ledger.customer(balance: 100_000)
        let card = try #require(customer.instrument?.id)
        let issued = try await customer.client.createPreAuthorization(
            CreatePreAuthorization(instrumentId: card, amount: 50_000, currency: "EUR", lifetimeSeconds: 3600))
        let voucher = try PreAuthorizationVoucher(encoded: Array(try #require(Data(base64Encoded: issued.voucher))))
        var spent: UInt64 = 0
        var lines: [String] = []
        var totals: [String: UInt64] = [:]
        for sequence in 1...UInt32(payments) {
            let amount = UInt64.random(in: 10...150)
            let request = try ledger.request(by: merchant, amount: amount, online: false)
            let acceptance = try ledger.acceptance(
                of: request, by: customer, tip: 5, preAuthorization: try PreAuthorizationPresentation(
                    voucher: voucher, sequence: sequence, spentBeforeMinorUnits: spent))
            spent += amount + 5
            totals[request.paymentID.description] = amount + 5
            lines.append(Data(request.encoded).base64EncodedString() + " " + Data(acceptance.encoded).base64EncodedString())
        }
        let directory = try scratchFile("crash")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try lines.joined(separator: "\n").write(toFile: directory + "/pairs", atomically: true, encoding: .utf8)
        return ([
            Self.childVariable: directory, "BLEPAY_SETTLEMENT_CRASH_LEDGER": ledger.baseURL,
            "BLEPAY_SETTLEMENT_CRASH_DEVICE": "\(merchant.device.id) \(try #require(merchant.device.secret))",
        ], totals)
    }

    /// Every payment settled, each once: the merchant got exactly the sum of the totals, and the books are sound.
    static func expectSettledOnce(
        _ totals: [String: UInt64], _ environment: [String: String], _ ledger: RunningLedger, _ merchant: RunningLedger.Party
    ) async throws {
        let directory = try #require(environment[Self.childVariable])
        let queue = SettlementQueue(store: try DaemonStore(path: directory + "/" + DaemonStore.fileName))
        for id in totals.keys {
            #expect(try queue.outcome(of: try PaymentID(bytes: try #require(Hex.decode(id, limit: 16)))) == .settled, "\(id)")
        }
        let credited = try await ledger.admin.account(merchant.account.id).balances.first { $0.currency == "EUR" }?.posted
        #expect(credited == Int64(totals.values.reduce(0, +)))
        #expect(try await ledger.server.audit().isEmpty)
    }

    @Test func aKilledBusinessSettlesEveryPaymentOnce() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let merchant = try await ledger.merchant()
            let (environment, totals) = try await Self.prepare(ledger, payments: 120, merchant: merchant)
            // Killed at random points, then one run to the end.
            let reported = try await onOwnThread { () throws -> [String] in
                var generator = SystemRandomNumberGenerator()
                var reported: [String] = []
                for _ in 0..<Self.kills {
                    reported += try Self.child(environment, killAfter: Double.random(in: 0.05...1.2, using: &generator))
                }
                return reported + (try Self.child(environment, killAfter: nil))
            }
            #expect(reported.last == "done", "the last run did not finish: \(reported.suffix(3))")
            #expect(reported.contains { $0.hasPrefix("settled ") }, "no killed run got as far as a settlement")
            try await Self.expectSettledOnce(totals, environment, ledger, merchant)
        }
    }

    /// The ledger is a `blepay-ledger` process on the same database, port and keys, killed and started again
    /// while one business keeps a payment and settles what waits every 100 ms; then it is left running until the
    /// business has settled everything.
    @Test func aKilledLedgerSettlesEveryPaymentOnce() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let merchant = try await ledger.merchant()
            let (prepared, totals) = try await Self.prepare(ledger, payments: 400, merchant: merchant)
            let environment = prepared.merging(["BLEPAY_SETTLEMENT_CRASH_PACE_MS": "100"]) { $1 }
            let configuration = try #require(environment[Self.childVariable]) + "/ledger.toml"
            let port = try #require(ledger.baseURL.split(separator: ":").last)
            try Data("""
                [server]
                port = \(port)
                [storage]
                backend = "sqlite"
                sqlite_path = "\(try #require(ledger.storage.sqlitePath))"
                [ledger]
                state_directory = "\(ledger.stateDirectory)"
                """.utf8).write(to: URL(fileURLWithPath: configuration))
            let reported = try await ledger.down {
                let business = Task.detached { try Self.child(environment, killAfter: nil) }
                let survivor = try await onOwnThread { () throws -> Process in
                    var generator = SystemRandomNumberGenerator()
                    for _ in 0..<Self.ledgerKills {
                        let process = try Self.serve(configuration)
                        Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.5, using: &generator))
                        kill(process.processIdentifier, SIGKILL)
                        process.waitUntilExit()
                    }
                    return try Self.serve(configuration)
                }
                defer {
                    survivor.terminate()
                    survivor.waitUntilExit()
                }
                return try await business.value
            }
            #expect(reported.last == "done", "the business did not finish: \(reported.suffix(3))")
            #expect(Set(reported.filter { $0.hasPrefix("settled ") }).count == totals.count)
            try await Self.expectSettledOnce(totals, environment, ledger, merchant)
        }
    }

    /// `blepay-ledger serve` with `configuration`, its output discarded.
    static func serve(_ configuration: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ledgerProduct.path)
        process.arguments = ["serve", "--config", configuration]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// One child run, killed after `killAfter` seconds (nil: waited for); the lines it printed.
    static func child(_ environment: [String: String], killAfter: Double?) throws -> [String] {
        try runTestChild("SettlementCrashTests.keepAndSettleUntilKilled", environment: environment, killAfter: killAfter)
            .split(separator: "\n").filter { $0.hasPrefix("kept ") || $0.hasPrefix("settled ") || $0 == "done" }
            .map(String.init)
    }

    /// The child `aKilledBusinessSettlesEveryPaymentOnce` starts and kills: keeps each payment and settles what
    /// waits every few, as the business daemon does, printing what it reported. Runs only in such a child.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
    func keepAndSettleUntilKilled() async throws {
        let environment = ProcessInfo.processInfo.environment
        let directory = try #require(environment[Self.childVariable])
        let device = try #require(environment["BLEPAY_SETTLEMENT_CRASH_DEVICE"]).split(separator: " ").map(String.init)
        let client = LedgerClient(
            baseURL: try #require(environment["BLEPAY_SETTLEMENT_CRASH_LEDGER"]),
            credentials: .device(id: device[0], secret: SymmetricKey(data: try #require(Data(base64Encoded: device[1])))),
            keys: try IdempotencyKeyStore(directory: directory + "/idempotency"), retry: .init(attempts: 1),
            logger: Logger(label: "blepay.crash") { _ in SwiftLogNoOpLogHandler() })
        let settlement = OfflineSettlement(
            queue: SettlementQueue(store: try DaemonStore(path: directory + "/" + DaemonStore.fileName)), ledger: client,
            settings: .init(interval: .seconds(3600), limits: .init(
                maximumCount: 10_000, maximumTotalMinorUnits: 10_000_000, maximumAgeMilliseconds: 86_400_000)),
            clock: DaemonContext.systemClock, logger: Logger(label: "blepay.crash") { _ in SwiftLogNoOpLogHandler() })
        let reporting = Task {
            for await event in settlement.events {
                if case .settled(let id, _) = event { FileHandle.standardOutput.write(Data("settled \(id)\n".utf8)) }
            }
        }
        let pairs = try String(contentsOfFile: directory + "/pairs", encoding: .utf8).split(separator: "\n")
        // Paced: one payment kept and what waits sent every `pace` ms, until all is settled (the ledger comes and goes).
        let pace = environment["BLEPAY_SETTLEMENT_CRASH_PACE_MS"].flatMap { UInt64($0) }
        for (index, line) in pairs.enumerated() {
            let parts = line.split(separator: " ")
            let request = try PaymentRequest(encoded: Array(try #require(Data(base64Encoded: String(parts[0])))))
            let acceptance = try PaymentAcceptance(encoded: Array(try #require(Data(base64Encoded: String(parts[1])))))
            if await settlement.keep(request, acceptance) == nil {
                FileHandle.standardOutput.write(Data("kept \(request.paymentID)\n".utf8))
            }
            if let pace {
                await settlement.round()
                try await Task.sleep(for: .milliseconds(pace))
            } else if index % 7 == 6 {
                await settlement.round()
            }
        }
        await settlement.round()
        while pace != nil, try settlement.status().waiting.count > 0 {
            try await Task.sleep(for: .milliseconds(50))
            await settlement.round()
        }
        // The last settled events reach standard output before `done`.
        try await Task.sleep(for: .milliseconds(100))
        reporting.cancel()
        FileHandle.standardOutput.write(Data("done\n".utf8))
    }
}
