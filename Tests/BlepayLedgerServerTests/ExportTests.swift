import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayProtocol
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// `blepay-ledger export`, `payments` and `payment` as an operator runs them on a ledger's database: CSV escaped
/// against broken columns and spreadsheet formulas, JSON that reads back as the API's payments, and a database that
/// is not there refused, not created.
@Suite struct ExportTests {
    static let ledger = BuiltProduct("blepay-ledger", overriddenBy: "BLEPAY_LEDGER")

    @Test func aMerchantsPaymentsAreExportedAsEscapedCSVAndAsJSONAndListed() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let now = LedgerServer.systemClock()
            let request = try PaymentRequest(
                paymentID: PaymentID(bytes: Array(repeating: 0x61, count: 16)), amount: Money(minorUnits: 1_250, currency: Currency("EUR")),
                reference: #"=HYPERLINK("x","y")"#, merchantID: cafe.account.id, merchantName: cafe.account.name, createdAt: now,
                expiresAt: now.adding(milliseconds: 120_000), businessOnline: true, signature: .unsigned
            ).signed(by: cafe.key)
            _ = try await cafe.client.createPayment(request)
            _ = try await cafe.client.accept(try ledger.acceptance(of: request, by: alice, tip: 50), request: nil)
            _ = try await cafe.client.createPayment(try ledger.request(by: cafe, amount: 300))
            let payments = try await cafe.client.payments().data

            let file = ledger.stateDirectory + "/export.toml"
            try Data("[storage]\nsqlite_path = \"\(try #require(ledger.storage.sqlitePath))\"\n[ledger]\nstate_directory = \"\(ledger.stateDirectory)\"\n"
                .utf8).write(to: URL(fileURLWithPath: file))
            let export = ["export", "--config", file, "--merchant", cafe.account.id]

            let csv = try await Self.ledger.run(export + ["--from", "2000-01-01", "--to", "\(now.millisecondsSince1970 + 3_600_000)"])
            #expect(csv.status == 0, "\(csv.output)")
            let lines = csv.output.components(separatedBy: "\r\n")
            #expect(lines.count == 4 && lines[3] == "", "\(csv.output)")
            #expect(lines[0] == "id,merchant,status,time,amount,tip,currency,reference,instrument,transaction")
            let paid = try #require(lines.first { $0.hasPrefix(request.paymentID.description) })
            #expect(paid.contains(#",1250,50,EUR,"'=HYPERLINK(""x"",""y"")",\#(alice.instrument!.id),"#), "\(paid)")
            #expect(try await Self.ledger.run(export + ["--to", "2000-01-02"]).output == lines[0] + "\r\n")

            let json = try await Self.ledger.run(export + ["--format", "json"])
            #expect(json.status == 0)
            #expect(try JSONDecoder().decode([PaymentResource].self, from: Data(json.output.utf8)) == payments)

            let table = try await Self.ledger.run(["payments", "--config", file, "--account", alice.account.id])
            #expect(table.status == 0 && table.output.split(separator: "\n").count == 2, "\(table.output)")
            #expect(table.output.hasPrefix("time ") && table.output.contains(request.paymentID.description))
            let one = try await Self.ledger.run(["payment", "--config", file, request.paymentID.description])
            #expect(try JSONDecoder().decode(PaymentResource.self, from: Data(one.output.utf8)) == payments.last)
            let unknown = try await Self.ledger.run(["payment", "--config", file, String(repeating: "0", count: 32)])
            #expect(unknown.status == 1 && unknown.output == "blepay-ledger: 404 not-found: no such payment\n", "\(unknown.output)")
        }
    }

    @Test func aDatabaseThatIsNotThereIsRefusedAndNotCreated() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-export-\(UUID().uuidString)").path
        for arguments in [["export", "--merchant", "acc_1"], ["payments", "--account", "acc_1"], ["payment", "0011"]] {
            let result = try await Self.ledger.run(arguments + ["--state-directory", directory])
            #expect(result.status == 1 && result.output == "blepay-ledger: storage.no-ledger: no ledger database at \(directory)/ledger.sqlite\n",
                "\(result.output)")
            #expect(!FileManager.default.fileExists(atPath: directory))
        }
        let badDay = try await Self.ledger.run(["export", "--merchant", "acc_1", "--from", "2026-13-01", "--state-directory", directory])
        #expect(badDay.status == 64, "\(badDay.output)")
    }
}
