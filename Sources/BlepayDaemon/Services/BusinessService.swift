import BlepayPayments
import BlepayProtocol
import Logging

/// The business's side as its control API offers it: send a payment request to every connected customer, cancel
/// it, list payments, and every payment's events. It scans and serves customers for as long as it runs; the
/// payments themselves are `BusinessDriver`'s.
public actor BusinessService {
    /// The link layer: BLE in the daemon, in memory in tests. `run` serves until cancelled.
    public struct Links: Sendable {
        public let transport: any PaymentTransport
        public let verifier: any AcceptanceVerifier
        public let run: @Sendable () async throws -> Void

        public init(
            transport: any PaymentTransport, verifier: any AcceptanceVerifier,
            run: @escaping @Sendable () async throws -> Void
        ) {
            self.transport = transport
            self.verifier = verifier
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
    private let settings: Settings
    private let logger: Logger
    private var payments = PaymentBook()
    private let continuation: AsyncStream<BusinessEvent>.Continuation
    /// Every payment's events, in order; the control API turns them into signals.
    public nonisolated let events: AsyncStream<BusinessEvent>

    public init(
        links: Links, ledger: any PaymentLedger, signer: any RequestSigner, merchant: BusinessDriver.Merchant,
        settings: Settings, clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) {
        self.links = links
        self.settings = settings
        self.logger = logger
        driver = BusinessDriver(
            transport: links.transport, ledger: ledger, signer: signer, verifier: links.verifier, merchant: merchant,
            maximumTipPercent: UInt64(settings.maximumTipPercent), clock: clock)
        (events, continuation) = AsyncStream.makeStream()
    }

    /// Scans, serves customers and relays events until the calling task is cancelled.
    public func run() async {
        let (links, driver, logger) = (links, driver, logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await links.run()
                } catch {
                    logger.error("the BLE link layer stopped", metadata: ["error": "\(error)"])
                }
            }
            group.addTask { await driver.run() }
            group.addTask { [weak self] in
                for await event in driver.events { await self?.record(event) }
            }
            await group.next()
            group.cancelAll()
        }
        continuation.finish()
    }

    /// The daemon is stopping: open requests are cancelled (their customers are told), payments being executed
    /// are waited for up to `limit` so that they end with their result; once each has ended with its event,
    /// `events` ends.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        for entry in payments.all where entry.status == .open {
            try? await driver.cancelPayment(entry.request.paymentID)
        }
        let deadline = ContinuousClock.now + limit
        while payments.hasUnended, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        continuation.finish()
    }

    /// Opens a request for `amount`; returns its payment id.
    public func request(amount: Money, reference: String?) async throws(PaymentError) -> PaymentID {
        let request = try await driver.sendPaymentRequest(
            amount: amount, reference: reference, lifetimeMilliseconds: UInt64(settings.requestLifetimeSeconds) * 1000)
        payments.add(request, from: nil)
        logger.info("payment request opened", metadata: ["payment": "\(request.paymentID)", "amount": "\(amount)"])
        return request.paymentID
    }

    /// Withdraws an open request from every customer.
    public func cancel(_ paymentID: PaymentID) async throws(PaymentError) {
        guard let entry = payments.entry(paymentID), !entry.status.isFinal else {
            throw PaymentError(.notFound, "no open payment \(paymentID)")
        }
        try await driver.cancelPayment(paymentID)
    }

    public func status(of paymentID: PaymentID) -> PaymentBook.Entry? { payments.entry(paymentID) }

    /// The requests sent since the daemon started, newest first.
    public var sentPayments: [PaymentBook.Entry] { payments.all }

    private func record(_ event: BusinessEvent) {
        switch event {
        case .accepted(let id, let peer, _): payments.update(id, to: .accepted, peer: peer)
        case .finished(let id, let peer, let receipt): payments.update(id, to: .finished, peer: peer, receipt: receipt)
        case .failed(let id, let peer, let error): payments.update(id, to: .failed(error.code), peer: peer)
        case .cancelled(let id): payments.update(id, to: .cancelled)
        case .expired(let id): payments.update(id, to: .expired)
        case .offered, .declined, .acceptanceRefused, .outcomePending: break
        }
        continuation.yield(event)
    }
}
