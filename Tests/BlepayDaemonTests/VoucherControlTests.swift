import BlepayControl
import BlepayDaemon
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing
import TestSupport

/// The customer's vouchers through `blepayctl voucher …` and the control API, against a real ledger (HTTP, SQLite):
/// obtained into escrow and kept in the daemon's state file, listed, and voided here first and then at the ledger.
@Suite struct VoucherControlTests {
    static let blepayctl = BuiltProduct("blepayctl", overriddenBy: "BLEPAYCTL")

    func run(_ fixture: ControlFixture, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await Self.blepayctl.run(arguments + ["--bus", fixture.bus.address])
    }

    func voucher(_ line: some StringProtocol) throws -> ControlVoucher {
        try JSONDecoder().decode(ControlVoucher.self, from: Data(line.utf8))
    }

    @Test func aVoucherIsObtainedListedAndVoided() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await ledger.customer(balance: 10_000)
            let card = try #require(customer.instrument?.id)
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let vouchers = try testVouchers(ledger: customer.client, deviceKey: customer.key.publicKey, trusting: [ledgerKey])
            let fixture = try await ControlFixture(vouchers: vouchers)
            defer { fixture.stop() }

            let obtained = try await run(fixture, ["voucher", "obtain", "40.00", "EUR", "--instrument", card, "--hours", "2", "--json"])
            #expect(obtained.status == 0, "\(obtained.output)")
            let held = try voucher(obtained.output.trimmingCharacters(in: .newlines))
            #expect(held.status == "usable" && held.details.amount == 4_000 && held.details.currency == "EUR")
            #expect(held.details.instrumentID == card && held.details.spent == 0 && held.details.uses == 0)
            let issued = try #require(held.details.issuedAt)
            #expect(held.details.expiresAt == issued + 7_200_000)
            // The limit left the card for the ledger's escrow.
            let balances = try await customer.client.instruments().first { $0.id == card }?.balances
            #expect(balances?.first { $0.currency == "EUR" }?.available == 6_000)

            let listed = try await run(fixture, ["voucher", "list", "--json"])
            #expect(try listed.output.split(separator: "\n").map { try voucher($0) } == [held])

            let voided = try await run(fixture, ["voucher", "void", held.voucherID])
            #expect(voided.status == 0 && voided.output == "voided \(held.voucherID)\n", "\(voided.output)")
            let after = try await run(fixture, ["voucher", "--json"]).output.split(separator: "\n").map { try voucher($0) }
            #expect(after.map(\.status) == ["voided"] && after.first?.details.voidedAt == fixedNow.millisecondsSince1970)
            #expect(try await customer.client.preAuthorization(held.voucherID).state == .voided)
        }
    }

    /// A voucher the ledger issued but the daemon never kept (it stopped as the answer came, or the answer was lost)
    /// held its limit in escrow until it expired, and the next try took the limit again: the next try now gets it.
    @Test func aVoucherIssuedButNeverKeptIsTheOneTheNextTryGets() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await ledger.customer(balance: 10_000)
            let card = try #require(customer.instrument?.id)
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let keys = try IdempotencyKeyStore(directory: try scratchFile("idempotency"))
            let client = LedgerClient(baseURL: ledger.baseURL, credentials: customer.client.credentials, keys: keys,
                retry: .init(attempts: 1), logger: testLogger)
            let body = CreatePreAuthorization(instrumentId: card, amount: 4_000, currency: "EUR", lifetimeSeconds: 7_200)
            let lost = try await client.createPreAuthorization(body)

            let vouchers = try testVouchers(ledger: client, deviceKey: customer.key.publicKey, trusting: [ledgerKey])
            let forty = try Money(decimal: "40.00", currency: Currency("EUR"))
            let kept = try await vouchers.obtain(instrumentID: card, limit: forty, lifetimeSeconds: 7_200)
            #expect(kept.voucher.voucherID.description == lost.id)
            let available = { try await client.instruments().first { $0.id == card }?.balances.first?.available }
            #expect(try await available() == 6_000)
            // Kept now: another voucher of the same limit is a new one.
            let another = try await vouchers.obtain(instrumentID: card, limit: forty, lifetimeSeconds: 7_200)
            #expect(another.voucher.voucherID != kept.voucher.voucherID)
            #expect(try await available() == 2_000)

            // A refusal is not replayed to the same request made again.
            let ten = try Money(decimal: "10.00", currency: Currency("EUR"))
            _ = try await ledger.admin.block(card)
            do throws(PaymentError) {
                _ = try await vouchers.obtain(instrumentID: card, limit: ten, lifetimeSeconds: 7_200)
                Issue.record("a blocked card gave a voucher")
            } catch {
                #expect(error.code == .blocked)
            }
            _ = try await ledger.admin.block(card, false)
            _ = try await vouchers.obtain(instrumentID: card, limit: ten, lifetimeSeconds: 7_200)
            #expect(try await available() == 1_000)
        }
    }

    @Test func withoutTheLedgerNothingIsObtainedAndAnUnknownVoucherIsNotFound() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let obtained = try await run(fixture, ["voucher", "obtain", "40.00", "EUR", "--instrument", "card-1"])
        #expect(obtained.status == 4 && obtained.output.hasPrefix("blepayctl: ledger-offline"), "\(obtained.output)")
        #expect(try await run(fixture, ["voucher", "list"]) == (0, ""))
        let voided = try await run(fixture, ["voucher", "void", "0011223344556677"])
        #expect(voided.status == 1 && voided.output.hasPrefix("blepayctl: not-found"), "\(voided.output)")
        let malformed = try await run(fixture, ["voucher", "obtain", "40.00", "EUR", "--hours", "0", "--instrument", "card-1"])
        #expect(malformed.status == 64, "\(malformed.output)")
    }
}
