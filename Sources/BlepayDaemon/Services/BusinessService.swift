import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Logging

/// The business's side as its control API offers it: send a payment request to every connected customer, cancel
/// it, look payments up, and every payment's events. It scans and serves customers for as long as it runs; the
/// payments themselves, and the record of each, are `BusinessDriver`'s.
public actor BusinessService {
    /// The link layer: BLE in the daemon, in memory in tests. `run` serves until cancelled.
    public struct Links: Sendable {
        public let transport: any PaymentTransport
        public let run: @Sendable () async throws -> Void

        public init(transport: any PaymentTransport, run: @escaping @Sendable () async throws -> Void) {
            self.transport = transport
            self.run = run
        }
    }

    public struct Settings: Sendable {
        public var requestLifetimeSeconds: Int
        public var maximumTipPercent: Int

        public init(requestLifetimeSeconds: Int = 120, maximumTipPercent: Int = 100) {
            self.requestLifetimeSeconds = requestLifetimeSeconds
            self.maximumTipPercent = maximumTipPercent
        }
    }

    private let links: Links
    private let driver: BusinessDriver
    private let settlement: OfflineSettlement?
    private let settings: Settings
    /// Where every payment's events are kept across restarts; none in tests that need no history.
    public nonisolated let history: HistoryRecorder?
    private let logger: Logger
    private let relayed = AsyncStream<BusinessEvent>.makeStream()
    /// Every payment's events, in order; the control API turns them into signals.
    public nonisolated var events: AsyncStream<BusinessEvent> { relayed.stream }

    public init(
        links: Links, ledger: any PaymentLedger, signer: any RequestSigner, merchant: BusinessDriver.Merchant,
        offline: (policy: OfflinePolicy, settlement: OfflineSettlement)? = nil, ledgerKeys: TrustedLedgerKeys? = nil,
        settings: Settings, history: HistoryRecorder? = nil,
        clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) {
        self.links = links
        self.settings = settings
        self.history = history
        self.logger = logger
        settlement = offline?.settlement
        driver = BusinessDriver(
            transport: links.transport, ledger: ledger, signer: signer,
            offline: offline.map { policy, settlement in
                BusinessDriver.Offline(policy: policy, queue: settlement) { settlement.ledgerReachable }
            },
            ledgerKeys: ledgerKeys, merchant: merchant, maximumTipPercent: UInt64(settings.maximumTipPercent), clock: clock)
    }

    /// Scans and serves customers until the calling task is cancelled (or the link layer fails, which is logged).
    public func serveLinks() async throws {
        do {
            try await links.run()
        } catch {
            logger.error("the BLE link layer stopped", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Runs the payments (offers, acceptances, the ledger, the settlement of those taken offline) until the link
    /// layer ends or the task is cancelled, and relays their events.
    public func runPayments() async {
        let (driver, logger, relayed, history) = (driver, logger, relayed, history)
        await withTaskGroup(of: Void.self) { group in
            if let settlement {
                group.addTask { await settlement.run() }
                group.addTask {
                    for await event in settlement.events {
                        await history?.record(event)
                        relayed.continuation.yield(event)
                    }
                }
                group.addTask { for await list in settlement.newDenyLists { await driver.denyListReceived(list) } }
            }
            group.addTask { await driver.run() }
            group.addTask {
                for await event in driver.events {
                    switch event {
                    case .customerRefused(let id, let peer, let error) where error.code == .clockSkew:
                        logger.warning("a customer refused a request: the clocks differ", metadata: [
                            "payment": "\(id)", "peer": "\(peer)",
                        ])
                    case .failed(let id, _, let error) where error.code == .clockSkew:
                        logger.warning("the ledger refused this device's clock", metadata: ["payment": "\(id)"])
                    default: break
                    }
                    await history?.record(event) { await driver.snapshot(of: $0) }
                    relayed.continuation.yield(event)
                }
                relayed.continuation.finish()
            }
        }
    }

    /// The daemon is stopping: open requests are cancelled (their customers are told), payments being executed
    /// are waited for up to `limit` so that they end with their result; once each has ended with its event,
    /// `events` ends.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        await driver.shutdown(waitingAtMost: limit)
    }

    /// Opens a request for `amount`; returns its payment id.
    public func request(amount: Money, reference: String?) async throws(PaymentError) -> PaymentID {
        let request = try await driver.sendPaymentRequest(
            amount: amount, reference: reference, lifetimeMilliseconds: UInt64(settings.requestLifetimeSeconds) * 1000)
        logger.info("payment request opened", metadata: ["payment": "\(request.paymentID)", "amount": "\(amount)"])
        return request.paymentID
    }

    /// Withdraws an open request from every customer.
    public func cancel(_ paymentID: PaymentID) async throws(PaymentError) {
        try await driver.cancelPayment(paymentID)
    }

    public func status(of paymentID: PaymentID) async -> PaymentSnapshot? { await driver.snapshot(of: paymentID) }

    /// The payments taken offline until the ledger settles them; nil if this business takes none.
    public nonisolated var offlineSettlement: OfflineSettlement? { settlement }

    /// The requests sent since the daemon started (the newest thousand ended ones), newest first.
    public var sentPayments: [PaymentSnapshot] { get async { await driver.snapshots } }
}
