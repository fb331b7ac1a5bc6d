import BlepayLedger
@testable import BlepayLedgerServer
import BlepayLedgerStore
import BlepayProtocol
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// The sweeper sleeps until the next deadline and writes only when one has come; its clock is the test's.
@Suite struct ExpirySweeperTests {
    final class TestClock: Sendable {
        private let time: Mutex<Timestamp>
        init(_ start: Timestamp) { time = Mutex(start) }
        var now: Timestamp { time.withLock { $0 } }
        func set(_ value: Timestamp) { time.withLock { $0 = value } }
    }

    func sweeper(_ storage: any LedgerStorage, _ operations: LedgerOperations, _ clock: TestClock,
        logger: Logger = testLogger) -> ExpirySweeper
    {
        ExpirySweeper(storage: storage, operations: operations, watch: ChangeWatch(pollInterval: nil), interval: .seconds(1),
            clock: { clock.now }, logger: logger)
    }

    /// A pass cut short by the ledger's shutdown is not a failed sweep: seen as "expiry sweep failed" in the log of
    /// a ledger stopped with SIGTERM right after it started.
    @Test(arguments: StorageKind.allCases)
    func aPassCutShortByShutdownLogsNoFailure(kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            let log = LogRecorder()
            let sweeper = sweeper(storage, LedgerOperations(ledgerKey: SigningKey()), TestClock(LedgerServer.systemClock()),
                logger: log.logger)
            let pass = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await sweeper.pass()
            }
            #expect(await pass.value == .swept)
            #expect(log.lines.isEmpty)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anEmptyLedgerHasNothingToWaitFor(kind: StorageKind) async throws {
        try await withStorage(kind) { storage in
            let watched = WatchedStorage(storage)
            let clock = TestClock(LedgerServer.systemClock())
            let pass = await sweeper(watched, LedgerOperations(ledgerKey: SigningKey()), clock).pass()
            #expect(pass == .idle(until: nil))
            #expect(watched.writes.load(ordering: .relaxed) == 0)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func anOpenPaymentIsExpiredAtItsDeadlineAndNotBefore(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            // Ten minutes: the running ledger's own sweeper leaves it alone while the test runs.
            let request = try ledger.request(by: cafe, amount: 300, expiresIn: 600_000)
            _ = try await cafe.client.createPayment(request)
            let watched = WatchedStorage(ledger.server.storage)
            let clock = TestClock(request.createdAt)
            let sweeper = sweeper(watched, LedgerOperations(keyring: ledger.server.keyring), clock)

            #expect(await sweeper.pass() == .idle(until: request.expiresAt))
            clock.set(Timestamp(millisecondsSince1970: request.expiresAt.millisecondsSince1970 - 1))
            #expect(await sweeper.pass() == .idle(until: request.expiresAt))
            #expect(watched.writes.load(ordering: .relaxed) == 0, "nothing was due, nothing written")
            #expect(try await cafe.client.payment(request.paymentID).status == .authorizationRequired)

            clock.set(request.expiresAt)
            #expect(await sweeper.pass() == .swept)
            let payment = try await cafe.client.payment(request.paymentID)
            #expect(payment.status == .failed && payment.failureReason == "expired")
            if case .idle(let next) = await sweeper.pass() { #expect(next.map { $0 > request.expiresAt } ?? true) }
        }
    }
}
