import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Foundation
import Logging
import Synchronization

/// Payments taken offline, from acceptance to the ledger's verdict: on the business, each is kept in the state file
/// under the merchant's limits before the customer hears it finished (`OfflineQueue`); on the customer, each its
/// business kept, as its own copy. Then they are settled in batches whenever the ledger can be reached (the ledger
/// pays each once, whichever side comes first). Whether it can is what the last call to it said; while it can, the
/// daemon's standing call (`LedgerContact`) stands in for polling it. Each new request of a business is signed as
/// online or offline from that. Rounds run when asked, when the ledger is found back, and every `interval` only
/// while something waits: with nothing waiting and the ledger there, nothing wakes.
public final class OfflineSettlement: OfflineQueue, Sendable {
    public struct Settings: Sendable {
        /// How often what waits is sent, and the ledger probed while it cannot be reached.
        public var interval: Duration
        public var limits: SettlementQueue.Limits

        public init(interval: Duration, limits: SettlementQueue.Limits) {
            self.interval = interval
            self.limits = limits
        }
    }

    private let queue: SettlementQueue
    private let ledger: LedgerClient
    private let settings: Settings
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private let reachability: LedgerReachability
    private let denyList: DenyListRefresh?
    private let denyLists = AsyncStream<DenyList>.makeStream(bufferingPolicy: .bufferingNewest(1))
    private let rounds = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    private let contacts = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    private let deadlines = Mutex(SettlementDeadlines())
    private let metrics: DaemonMetrics?
    private let continuation: AsyncStream<BusinessEvent>.Continuation
    /// `settled` and `settlementRefused`, as the ledger decides each payment.
    public let events: AsyncStream<BusinessEvent>

    /// `reachability`: shared with the rest of the daemon; by default its own, whose changes the business logs.
    public init(
        queue: SettlementQueue, ledger: LedgerClient, settings: Settings, denyList: DenyListRefresh? = nil,
        reachability: LedgerReachability? = nil, metrics: DaemonMetrics? = nil, clock: @escaping @Sendable () -> Timestamp,
        logger: Logger
    ) {
        self.denyList = denyList
        self.metrics = metrics
        self.queue = queue
        self.ledger = ledger
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.reachability = reachability ?? LedgerReachability(ledger: ledger, logger: logger, meaning: (
            reachable: "the ledger is reachable; requests are online",
            unreachable: "the ledger is unreachable; requests are offline"), metrics: metrics)
        (events, continuation) = AsyncStream.makeStream()
    }

    /// The ledger's deny lists, as each newer one is kept (the one kept from before first).
    public var newDenyLists: AsyncStream<DenyList> { denyLists.stream }

    /// Each answer to the standing call (only the latest, if several come before it is read): when what else a daemon
    /// asks the ledger for (refunds, voucher renewals) may have changed.
    public var ledgerAnswers: AsyncStream<Void> { contacts.stream }

    /// Whether the ledger answered the last call to it.
    public var ledgerReachable: Bool { reachability.isReachable }

    public func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> PaymentError? {
        do {
            try queue.enqueue(request, acceptance, at: clock(), limits: settings.limits)
            logger.info("payment kept for settlement", metadata: ["payment": "\(request.paymentID)"])
            return nil
        } catch {
            logger.warning("an offline payment was not kept", metadata: ["payment": "\(request.paymentID)", "error": "\(error)"])
            return switch error.code {
            case .limitReached: PaymentError(.limitExceeded, error.message)
            case .conflict: PaymentError(.alreadyPaid, error.message)
            case .voucherReused: PaymentError(.preAuthorizationInvalid, error.message)
            case .storage: PaymentError(.unexpected, "the state file failed")
            }
        }
    }

    public func kept(_ id: PaymentID) async -> KeptPayment? {
        do {
            return try queue.entry(of: id).map { KeptPayment(request: $0.request, acceptance: $0.acceptance, keptAt: $0.queuedAt) }
        } catch {
            logger.error("the settlement queue could not be read", metadata: ["payment": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    /// What waits for the ledger now, and whether the ledger answered the last call.
    public func status() throws(PaymentError) -> (waiting: SettlementQueue.Summary, ledgerReachable: Bool) {
        (try stored { () throws(QueueError) in try queue.summary() }, reachability.isReachable)
    }

    /// Each payment still waiting, then the latest the ledger decided.
    public func entries() throws(PaymentError) -> [SettlementQueue.Entry] {
        try stored { () throws(QueueError) in try queue.entries() }
    }

    /// What the state file answers; its failure as the control API reports it.
    private func stored<T>(_ read: () throws(QueueError) -> T) throws(PaymentError) -> T {
        do {
            return try read()
        } catch {
            throw PaymentError(.unexpected, "the state file failed: \(error)")
        }
    }

    /// Asks for a round now rather than at the next interval.
    public func settleNow() { rounds.continuation.yield() }

    /// Until cancelled: the standing call at the ledger, and a round now, whenever `settleNow` asks or the ledger is
    /// found back, and after `interval` while something waits.
    public func run() async {
        if let kept = denyList?.kept() { denyLists.continuation.yield(kept) }
        let found = reachability.changes()
        let contact = LedgerContact(ledger: ledger, reachability: reachability, retry: settings.interval, logger: logger)
        await withDiscardingTaskGroup { group in
            group.addTask { await contact.run { changed in await self.answered(changed) } }
            group.addTask { for await now in found where now { self.settleNow() } }
            group.addTask { await self.settleInRounds() }
        }
        continuation.finish()
        denyLists.continuation.finish()
        contacts.continuation.finish()
    }

    private func settleInRounds() async {
        var next: Task<Void, Never>?
        rounds.continuation.yield()
        for await _ in rounds.stream {
            next?.cancel()
            if Task.isCancelled { break }
            await round()
            guard (try? queue.summary().count) != 0 else { continue }
            next = Task { [rounds, interval = settings.interval] in
                if (try? await Task.sleep(for: interval)) != nil { rounds.continuation.yield() }
            }
        }
        next?.cancel()
    }

    /// After each answer to the standing call: the deny list is fetched when it changed, or when due.
    private func answered(_ changed: Bool) async {
        if let list = await denyList?.refresh(reporting: reachability, force: changed) {
            denyLists.continuation.yield(list)
        }
        contacts.continuation.yield()
    }

    /// Sends batch after batch until none waits or the ledger cannot be reached. Then what still waits is checked
    /// against its deadline.
    func round() async {
        await settle()
        if let metrics, let waiting = try? queue.summary() {
            let age = waiting.oldest.map { Double(clock().millisecondsSince1970 &- $0.millisecondsSince1970) / 1000 } ?? 0
            metrics.settlementWaiting(count: waiting.count, oldestAgeSeconds: age)
        }
        do {
            try warnOfDeadlines()
        } catch {
            logger.error("the settlement queue could not be read", metadata: ["error": "\(error)"])
        }
    }

    private func settle() async {
        do {
            while let batch = try queue.batch(at: clock()) {
                guard await send(batch) else { return }
            }
        } catch {
            logger.error("the settlement queue failed", metadata: ["error": "\(error)"])
        }
    }

    /// Logs what nears, or passed, its voucher's expiry while it waits (`SettlementDeadlines`).
    private func warnOfDeadlines() throws {
        let waiting = try queue.entries(ended: 0).compactMap { entry -> SettlementDeadlines.Waiting? in
            guard let voucher = entry.acceptance.preAuthorization?.voucher else { return nil }
            return SettlementDeadlines.Waiting(
                payment: entry.request.paymentID, keptAt: entry.queuedAt, deadline: voucher.expiresAt)
        }
        let now = clock()
        for warning in deadlines.withLock({ $0.check(waiting, at: now) }) {
            let metadata: Logger.Metadata = [
                "payment": "\(warning.waiting.payment)", "voucher_expires_at": "\(warning.waiting.deadline)",
            ]
            if warning.level == .past {
                logger.error(
                    "an offline payment waited past its voucher's expiry: the ledger takes it only within its grace",
                    metadata: metadata)
            } else {
                logger.warning(
                    "an offline payment has waited \(warning.level.rawValue)% of the time to its voucher's expiry: reach the ledger to settle it",
                    metadata: metadata)
            }
        }
    }

    /// One batch, as stored (the same items under the same key on every try); true once its answer is applied.
    private func send(_ batch: SettlementQueue.Batch) async -> Bool {
        let results: SettlementResults
        do {
            results = try await ledger.settle(batch.items.map { ($0.request, $0.acceptance) }, operation: batch.idempotencyKey)
        } catch {
            if error.isCancelled { return false }
            if error.isUnavailable { reachability.record(false) }
            logger.warning("a settlement batch was not answered; it is sent again later", metadata: [
                "batch": "\(batch.id)", "payments": "\(batch.items.count)", "error": "\(error)",
            ])
            return false
        }
        reachability.record(true)
        var outcomes: [PaymentID: SettlementQueue.Outcome] = [:]
        var receipts: [PaymentID: Receipt] = [:]
        for item in batch.items {
            let id = item.request.paymentID
            // A payment id is its merchant's: the answer for this item names both (older ledgers, the id alone).
            guard let answer = results.results.first(where: {
                $0.paymentId == id.description && ($0.merchantId ?? item.request.merchantID) == item.request.merchantID
            }) else { continue }
            outcomes[id] = switch answer.result {
            case .settled, .alreadySettled: .settled
            default: .refused(answer.result.rawValue)
            }
            receipts[id] = answer.receipt.flatMap { Data(base64Encoded: $0) }.flatMap { try? Receipt(encoded: Array($0)) }
                .flatMap { $0.paymentID == id && $0.status == .settled ? $0 : nil }
        }
        do {
            try queue.close(batch, outcomes: outcomes, at: clock())
        } catch {
            logger.error("a settlement answer could not be stored; the batch is sent again", metadata: ["error": "\(error)"])
            return false
        }
        for (id, outcome) in outcomes.sorted(by: { $0.key.description < $1.key.description }) {
            switch outcome {
            case .settled:
                continuation.yield(.settled(id, receipts[id]))
            case .refused(let code):
                logger.warning("the ledger refused an offline payment", metadata: ["payment": "\(id)", "code": "\(code)"])
                continuation.yield(.settlementRefused(id, PaymentError(.preAuthorizationInvalid, code)))
            }
        }
        logger.info("settlement batch answered", metadata: ["batch": "\(batch.id)", "decided": "\(outcomes.count)"])
        return true
    }
}
