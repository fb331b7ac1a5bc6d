import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// `[vouchers] auto_renew` against a real ledger (HTTP, SQLite) and a real state file: `VoucherAutoRenew` as the
/// customer daemon builds it from its configuration and runs it after each probe that reaches the ledger.
@Suite(.timeLimit(.minutes(2))) struct VoucherAutoRenewTests {
    /// A customer with a card of 200.00 EUR, its vouchers in a fresh state file, and auto-renew as `[vouchers]`
    /// with `instrument` (by default the card) configures it, on a clock the test moves.
    struct Customer {
        let party: RunningLedger.Party
        let card: String
        let wallet: VoucherWallet
        let clock: MovingClock
        let log: LogRecorder
        let renewal: VoucherAutoRenew

        init(_ ledger: RunningLedger, instrument: String? = nil) async throws {
            party = try await ledger.customer(balance: 20_000)
            card = try #require(party.instrument?.id)
            let ledgerKey = try await ledger.admin.ledgerKey().publicKey
            wallet = VoucherWallet(
                store: try DaemonStore(path: scratchFile("customer-state.sqlite")), deviceKey: party.key.publicKey,
                trusting: TrustedLedgerKeys([try Key32(Hex.decode(ledgerKey, limit: 32) ?? [])]))
            let clock = MovingClock()
            self.clock = clock
            log = LogRecorder()
            let configuration = try DaemonConfiguration.parse(.customer, """
                [ledger]
                public_key = "\(ledgerKey)"
                [vouchers]
                auto_renew = true
                instrument = "\(instrument ?? card)"
                limit = 5000
                renew_below = 1000
                """, file: "customer.toml")
            renewal = VoucherAutoRenew(
                settings: try #require(VoucherAutoRenew.Settings(configuration.vouchers)),
                vouchers: CustomerVouchers(wallet: wallet, ledger: party.client) { clock.now() }, clock: { clock.now() },
                logger: log.logger)
        }

        /// What is available on the card in EUR, at the ledger.
        func available() async throws -> Int64? {
            try await party.client.instruments().first { $0.id == card }?.balances.first { $0.currency == "EUR" }?.available
        }
    }

    @Test func aVoucherIsObtainedWhenNoneIsHeldAndAgainOnceItRunsLow() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await Customer(ledger)
            guard case .obtained(let first) = await customer.renewal.renewIfDue() else {
                Issue.record("nothing was obtained")
                return
            }
            #expect(first.voucher.limit == eur(5_000) && first.voucher.instrumentID == customer.card)
            #expect(first.voucher.expiresAt.millisecondsSince1970 - first.voucher.issuedAt.millisecondsSince1970 == 86_400_000)
            // The limit left the card for the voucher's escrow at the ledger.
            let resource = try await customer.party.client.preAuthorization(first.voucher.voucherID.description)
            #expect(resource.state == .available && resource.limit == 5_000 && resource.spent == 0)
            #expect(try await customer.available() == 15_000)
            #expect(customer.log.lines == ["info: obtained voucher \(first.voucher.voucherID) of 50.00 EUR (auto-renew)"])

            #expect(await customer.renewal.renewIfDue() == .notDue)
            #expect(try customer.wallet.vouchers().count == 1)
            #expect(try await customer.available() == 15_000)

            // Signing a payment of 41.00 under it, as an offline acceptance does, leaves 9.00: below renew_below.
            _ = try customer.wallet.present(PaymentID.random(), total: eur(4_100), at: customer.clock.now())
            guard case .obtained(let second) = await customer.renewal.renewIfDue() else {
                Issue.record("no second voucher was obtained")
                return
            }
            #expect(second.voucher.voucherID != first.voucher.voucherID && second.voucher.limit == eur(5_000))
            #expect(try await customer.available() == 10_000)
            #expect(await customer.renewal.renewIfDue() == .notDue)
            #expect(try customer.wallet.vouchers().map(\.remainingMinorUnits).sorted() == [900, 5_000])
        }
    }

    /// A daemon stopping while it asks is not refused: it logged a warning, and its next start waited a minute.
    @Test func aTryCutShortByShutdownIsNoFailure() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await Customer(ledger)
            let stopping = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await customer.renewal.renewIfDue()
            }
            #expect(await stopping.value == .stopped)
            #expect(customer.log.lines.isEmpty)
            // Nothing is waited out.
            guard case .obtained = await customer.renewal.renewIfDue() else {
                Issue.record("the next try was not made: \(customer.log.lines)")
                return
            }
        }
    }

    @Test func aRefusalIsLoggedAndWaitedOutLongerEachTime() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await Customer(ledger, instrument: "ins_unknown")
            guard case .failed(let error, let retryAt) = await customer.renewal.renewIfDue() else {
                Issue.record("the unknown instrument was not refused")
                return
            }
            #expect(error.code == .notFound)
            #expect(retryAt == customer.clock.now().adding(milliseconds: 60_000))
            #expect(customer.log.lines == ["warning: no voucher obtained (auto-renew) error=not-found retry_in_seconds=60"])

            // Until then nothing is asked of the ledger, however often the ledger is probed.
            #expect(await customer.renewal.renewIfDue() == .backingOff(until: retryAt))
            customer.clock.advance(seconds: 59)
            #expect(await customer.renewal.renewIfDue() == .backingOff(until: retryAt))
            #expect(customer.log.lines.count == 1)

            customer.clock.advance(seconds: 1)
            guard case .failed(let again, let later) = await customer.renewal.renewIfDue() else {
                Issue.record("the second try was not refused")
                return
            }
            #expect(again.code == .notFound && later == retryAt.adding(milliseconds: 120_000))
            #expect(customer.log.lines.last == "warning: no voucher obtained (auto-renew) error=not-found retry_in_seconds=120")
            #expect(try customer.wallet.vouchers().isEmpty)
            #expect(try await customer.available() == 20_000)
        }
    }

    @Test func aVoucherObtainedEndsTheWait() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let customer = try await Customer(ledger)
            _ = try await ledger.admin.block(customer.card)
            for seconds: UInt64 in [60, 120, 240] {
                guard case .failed(let error, _) = await customer.renewal.renewIfDue() else {
                    Issue.record("the blocked card was not refused")
                    return
                }
                #expect(error.code == .blocked)
                customer.clock.advance(seconds: seconds)
            }
            _ = try await ledger.admin.block(customer.card, false)
            guard case .obtained(let voucher) = await customer.renewal.renewIfDue() else {
                Issue.record("nothing was obtained once the card was unblocked")
                return
            }
            // Used up, the voucher calls for the next; the card is blocked again, and the wait is back to a minute.
            _ = try customer.wallet.present(PaymentID.random(), total: voucher.voucher.limit, at: customer.clock.now())
            _ = try await ledger.admin.block(customer.card)
            guard case .failed(let error, let retryAt) = await customer.renewal.renewIfDue() else {
                Issue.record("the blocked card was not refused")
                return
            }
            #expect(error.code == .blocked && retryAt == customer.clock.now().adding(milliseconds: 60_000))
        }
    }
}

/// A clock that stands still but for the test's moves: from five minutes past the system's time at its start, so that
/// the vouchers a real ledger issues during the test are valid by it.
final class MovingClock: Sendable {
    private let time = Mutex(DaemonContext.systemClock().adding(milliseconds: 300_000))

    func now() -> Timestamp { time.withLock { $0 } }

    func advance(seconds: UInt64) { time.withLock { $0 = $0.adding(milliseconds: seconds * 1000) } }
}

private func eur(_ minorUnits: UInt64) -> Money { try! Money(minorUnits: minorUnits, currency: Currency("EUR")) }
