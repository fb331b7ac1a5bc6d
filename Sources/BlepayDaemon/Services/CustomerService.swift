import BlepayPayments
import BlepayProtocol
import Logging

/// The customer's side as its control API offers it, mirroring the reference SDK: start and stop receiving, accept
/// (with an instrument, managed or delegated, and a tip) or cancel a shown payment, and every payment's events. Each
/// registration's payments, and the record of each, are its `CustomerDriver`'s; those of registrations that ended
/// are kept as they ended.
public actor CustomerService {
    /// One registration's link layer: BLE in the daemon, in memory in tests. `run` serves until cancelled.
    public struct Links: Sendable {
        public let transport: any PaymentTransport
        public let run: @Sendable () async throws -> Void

        public init(transport: any PaymentTransport, run: @escaping @Sendable () async throws -> Void) {
            self.transport = transport
            self.run = run
        }
    }

    private struct Registration {
        let driver: CustomerDriver
        let tasks: [Task<Void, Never>]
        let relaying: Task<Void, Never>
    }

    /// How many payments of ended registrations are kept for `status` and `shownPayments`.
    static let pastCapacity = 1000

    private let makeLinks: @Sendable () -> Links
    private let signer: any AcceptanceSigner
    private let ledger: (any PaymentLedger)?
    private let settlement: (any OfflineQueue)?
    private let accepted: (any AcceptedPayments)?
    private let ledgerKeys: TrustedLedgerKeys?
    /// Where every payment's events are kept across restarts; none in tests that need no history.
    public nonisolated let history: HistoryRecorder?
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private var registration: Registration?
    /// The newest deny list, for every registration.
    private var denyList: DenyList?
    /// Payments of ended registrations, newest first.
    private var past: [PaymentSnapshot] = []
    private let continuation: AsyncStream<CustomerEvent>.Continuation
    /// Every event of every registration, in order; the control API turns them into signals.
    public nonisolated let events: AsyncStream<CustomerEvent>

    public init(
        links: @escaping @Sendable () -> Links, signer: any AcceptanceSigner, ledger: (any PaymentLedger)? = nil,
        settlement: (any OfflineQueue)? = nil, accepted: (any AcceptedPayments)? = nil, ledgerKeys: TrustedLedgerKeys? = nil,
        history: HistoryRecorder? = nil, clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) {
        self.ledgerKeys = ledgerKeys
        self.history = history
        makeLinks = links
        self.signer = signer
        self.ledger = ledger
        self.settlement = settlement
        self.accepted = accepted
        self.clock = clock
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream()
    }

    public var isReceiving: Bool { registration != nil }

    /// Starts a registration: advertising, serving, and showing requests, until `stopReceiving`. Starting while
    /// receiving changes nothing.
    public func startReceiving() {
        guard registration == nil else { return }
        let links = makeLinks()
        let driver = CustomerDriver(
            transport: links.transport, signer: signer, ledger: ledger, settlement: settlement, accepted: accepted,
            ledgerKeys: ledgerKeys, clock: clock)
        let logger = self.logger
        let serving = Task {
            do {
                try await links.run()
            } catch {
                logger.error("the BLE link layer stopped", metadata: ["error": "\(error)"])
            }
        }
        let driving = Task { [denyList] in
            if let denyList { await driver.denyListReceived(denyList) }
            await driver.run()
        }
        let relaying = Task { [continuation, history] in
            for await event in driver.events {
                if case .error(let peer, let id, let error) = event, error.code == .clockSkew {
                    // Its own line: a wrong clock hides every request, and only the operator can set it right.
                    logger.warning("a request was refused: the clocks differ", metadata: [
                        "peer": "\(peer)", "payment": "\(id.map(\.description) ?? "-")", "detail": "\(error.detail ?? "")",
                    ])
                }
                await history?.record(event) { await driver.snapshot(of: $0) }
                continuation.yield(event)
            }
        }
        registration = Registration(driver: driver, tasks: [serving, driving], relaying: relaying)
        logger.info("receiving payments")
    }

    /// A deny list from the ledger: the merchants it names are refused, now and by later registrations.
    public func denyListReceived(_ list: DenyList) async {
        guard list.supersedes(denyList) else { return }
        denyList = list
        await registration?.driver.denyListReceived(list)
    }

    /// Receives from the start, and lets the app stop and start receiving, until the calling task is cancelled.
    public func run() async {
        startReceiving()
        let (forever, keep) = AsyncStream<Never>.makeStream()
        for await _ in forever {}
        keep.finish()
    }

    /// Ends the registration: every connection closes with `disconnected`, open payments end first with their event.
    public func stopReceiving() async {
        guard let current = registration else { return }
        await current.driver.stop()
        await end(current)
    }

    /// The daemon is stopping: payments still shown are declined (their business is told), accepted ones are waited
    /// for up to `limit` so that they end with their result; once each has ended with its event, receiving stops and
    /// `events` ends.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        if let current = registration {
            await current.driver.shutdown(waitingAtMost: limit)
            await end(current)
        }
        continuation.finish()
    }

    /// Accepts a shown payment for `amount` (the request's), with `tipMinorUnits` on top, paid with `instrumentID`.
    public func accept(
        _ paymentID: PaymentID, amount: Money, tipMinorUnits: UInt64, instrumentID: String, delegated: Bool
    ) async throws(PaymentError) {
        try await receiving().acceptPayment(
            paymentID, amount: amount, tipMinorUnits: tipMinorUnits, instrumentID: instrumentID,
            delegatedInstrument: delegated)
    }

    /// Declines a shown payment.
    public func cancel(_ paymentID: PaymentID) async throws(PaymentError) {
        try await receiving().cancelPayment(paymentID)
    }

    /// What became of a payment this daemon was shown, nil if none.
    public func status(of paymentID: PaymentID) async -> PaymentSnapshot? {
        if let current = await registration?.driver.snapshot(of: paymentID) { return current }
        return past.first { $0.request.paymentID == paymentID }
    }

    /// The payments shown since the daemon started, newest first.
    public var shownPayments: [PaymentSnapshot] {
        get async { (await registration?.driver.snapshots ?? []) + past }
    }

    private func receiving() throws(PaymentError) -> CustomerDriver {
        guard let driver = registration?.driver else { throw PaymentError(.notFound, "not receiving payments") }
        return driver
    }

    /// Waits for the registration's last event to be relayed, stops its link layer and keeps its payments.
    private func end(_ current: Registration) async {
        guard registration?.driver === current.driver else { return }
        registration = nil
        await current.relaying.value
        for task in current.tasks { task.cancel() }
        for task in current.tasks { await task.value }
        past = Array((await current.driver.snapshots + past).prefix(Self.pastCapacity))
        logger.info("stopped receiving payments")
    }
}
