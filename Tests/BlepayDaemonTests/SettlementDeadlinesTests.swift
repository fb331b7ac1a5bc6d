import BlepayDaemonStore
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import LedgerTestSupport
import Testing

@testable import BlepayDaemon

/// A payment waiting for settlement is warned of at half and nine tenths of the time from keeping it to its
/// voucher's expiry, and once past it: each once, whatever the number of rounds, and forgotten once settled.
@Suite struct SettlementDeadlinesTests {
    let t0 = Timestamp(millisecondsSince1970: 1_800_000_000_000)
    func at(_ ms: UInt64) -> Timestamp { t0.adding(milliseconds: ms) }
    func waiting(_ n: UInt8, kept: UInt64 = 0, deadline: UInt64 = 1_000) throws -> SettlementDeadlines.Waiting {
        .init(payment: try PaymentID(bytes: Array(repeating: n, count: 16)), keptAt: at(kept), deadline: at(deadline))
    }

    @Test func eachLevelIsWarnedOnceAtItsBoundary() throws {
        var d = SettlementDeadlines()
        let w = try waiting(1)
        #expect(d.check([w], at: at(499)).isEmpty)
        #expect(d.check([w], at: at(500)).map(\.level) == [.half])
        #expect(d.check([w], at: at(899)).isEmpty)
        #expect(d.check([w], at: at(900)).map(\.level) == [.late])
        #expect(d.check([w], at: at(999)).isEmpty)
        #expect(d.check([w], at: at(1_000)).map(\.level) == [.past])
        #expect(d.check([w], at: at(5_000)).isEmpty)
    }

    @Test func aRoundThatMissesALevelWarnsOfTheHighestOnceAndASettledPaymentIsForgotten() throws {
        var d = SettlementDeadlines()
        let (w1, w2) = (try waiting(1), try waiting(2, kept: 800, deadline: 10_800))
        #expect(d.check([w1, w2], at: at(950)) == [.init(waiting: w1, level: .late)])
        #expect(d.check([w2], at: at(5_800)) == [.init(waiting: w2, level: .half)])
        // w1 settled meanwhile: were it kept again, it would be warned of anew.
        #expect(d.check([w1, w2], at: at(5_900)) == [.init(waiting: w1, level: .past)])
        // A payment kept after its voucher expired (a late copy) is past at once.
        let late = try waiting(3, kept: 2_000, deadline: 1_000)
        #expect(d.check([w1, w2, late], at: at(2_000)) == [.init(waiting: late, level: .past)])
    }
}

/// The settlement rounds of a device that cannot reach the ledger log those warnings for a real queue's payments.
@Suite struct SettlementDeadlineLogTests {
    @Test func aPaymentWaitingWhileTheLedgerIsAwayIsWarnedOfAsItsVoucherNearsExpiry() async throws {
        let logs = LogRecorder()
        let clock = MovingClock()
        let queue = SettlementQueue(store: try DaemonStore(path: scratchFile("deadline-state.sqlite")))
        let settlement = OfflineSettlement(
            queue: queue,
            ledger: LedgerClient(baseURL: "http://127.0.0.1:9", credentials: .device(id: "d", secret: SymmetricKey(size: .bits256)),
                retry: .init(attempts: 1, timeout: .seconds(1)), logger: testLogger),
            settings: .init(interval: .seconds(3600), limits: .unlimited), clock: clock.now, logger: logs.logger)
        let voucher = try PreAuthorizationVoucher(
            voucherID: FixedBytes<Bytes8>(Array(repeating: 4, count: 8)), instrumentID: "card-1",
            customerKey: Key32(Array(repeating: 1, count: 32)), limit: Money(minorUnits: 10_000, currency: Currency("EUR")),
            issuedAt: clock.now(), expiresAt: clock.now().adding(milliseconds: 10_000_000),
            ledgerKeyID: FixedBytes<Bytes8>(Array(repeating: 2, count: 8)), signature: .unsigned)
        let id = PaymentID.random()
        let request = try PaymentRequest(
            paymentID: id, amount: Money(minorUnits: 500, currency: Currency("EUR")), reference: nil, merchantID: "m_cafe",
            merchantName: "Café", createdAt: clock.now(), expiresAt: clock.now().adding(milliseconds: 120_000),
            businessOnline: false, signature: .unsigned)
        let acceptance = try PaymentAcceptance(
            paymentID: id, amount: request.amount, tipMinorUnits: 0, instrumentID: "card-1", delegatedInstrument: false,
            createdAt: clock.now(), requestHash: Hash32(Array(repeating: 1, count: 32)),
            sessionHash: Hash32(Array(repeating: 2, count: 32)), customerKey: voucher.customerKey,
            preAuthorization: PreAuthorizationPresentation(voucher: voucher, sequence: 1, spentBeforeMinorUnits: 0),
            signature: .unsigned)
        #expect(await settlement.keep(request, acceptance) == nil)
        func warnings() -> [String] { logs.lines.filter { $0.contains("voucher's expiry") } }
        await settlement.round()
        #expect(warnings().isEmpty)
        clock.advance(seconds: 5_000)
        await settlement.round()
        await settlement.round()
        #expect(warnings().count == 1, "\(logs.lines)")
        #expect(warnings().first?.hasPrefix("warning: an offline payment has waited 50%") == true)
        #expect(warnings().first?.contains("payment=\(id)") == true)
        clock.advance(seconds: 5_000)
        await settlement.round()
        #expect(warnings().count == 2)
        #expect(warnings().last?.hasPrefix("error: an offline payment waited past its voucher's expiry") == true)
    }
}
