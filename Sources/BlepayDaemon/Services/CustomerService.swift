import BlepayPayments
import BlepayProtocol
import Logging

/// The customer's side as its control API offers it, mirroring the reference SDK: start and stop receiving, accept
/// (with an instrument, managed or delegated, and a tip) or cancel a shown payment, and every payment's events. The
/// payments themselves are `CustomerDriver`'s; this keeps which connection showed each one and how each ended.
public actor CustomerService {
    /// One registration's link layer: BLE in the daemon, in memory in tests. `run` serves until cancelled.
    public struct Links: Sendable {
        public let transport: any PaymentTransport
        public let signer: any AcceptanceSigner
        public let run: @Sendable () async throws -> Void

        public init(
            transport: any PaymentTransport, signer: any AcceptanceSigner, run: @escaping @Sendable () async throws -> Void
        ) {
            self.transport = transport
            self.signer = signer
            self.run = run
        }
    }

    private struct Registration {
        let driver: CustomerDriver
        let tasks: [Task<Void, Never>]
    }

    private let makeLinks: @Sendable () -> Links
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private var registration: Registration?
    private var payments = PaymentBook()
    private let continuation: AsyncStream<CustomerEvent>.Continuation
    /// Every event of every registration, in order; the control API turns them into signals.
    public nonisolated let events: AsyncStream<CustomerEvent>

    public init(links: @escaping @Sendable () -> Links, clock: @escaping @Sendable () -> Timestamp, logger: Logger) {
        makeLinks = links
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
        let driver = CustomerDriver(transport: links.transport, signer: links.signer, clock: clock)
        let logger = self.logger
        let serving = Task {
            do {
                try await links.run()
            } catch {
                logger.error("the BLE link layer stopped", metadata: ["error": "\(error)"])
            }
        }
        let driving = Task { await driver.run() }
        let relaying = Task { [weak self] in
            for await event in driver.events { await self?.record(event) }
        }
        registration = Registration(driver: driver, tasks: [serving, driving, relaying])
        logger.info("receiving payments")
    }

    /// Ends the registration: every connection closes with `disconnected`, open payments end first with their event.
    public func stopReceiving() async {
        guard let current = registration else { return }
        registration = nil
        await current.driver.stopBLE()
        await current.tasks[2].value
        for task in current.tasks { task.cancel() }
        for task in current.tasks { await task.value }
        logger.info("stopped receiving payments")
    }

    /// The daemon is stopping: payments still shown are declined (their business is told), accepted ones are waited
    /// for up to `limit` so that they end with their result; once each has ended with its event, receiving stops and
    /// `events` ends.
    public func shutdown(waitingAtMost limit: Duration = .seconds(15)) async {
        for entry in payments.all where entry.status == .open {
            try? await cancel(entry.request.paymentID)
        }
        let deadline = ContinuousClock.now + limit
        while payments.hasUnended, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        await stopReceiving()
        continuation.finish()
    }

    /// Accepts a shown payment for `amount` (the request's), with `tipMinorUnits` on top, paid with `instrumentID`.
    public func accept(
        _ paymentID: PaymentID, amount: Money, tipMinorUnits: UInt64, instrumentID: String, delegated: Bool
    ) async throws(PaymentError) {
        let (driver, peer) = try open(paymentID)
        try await driver.acceptPayment(
            paymentID, from: peer, amount: amount, tipMinorUnits: tipMinorUnits, instrumentID: instrumentID,
            delegatedInstrument: delegated)
        payments.update(paymentID, to: .accepted)
    }

    /// Declines a shown payment.
    public func cancel(_ paymentID: PaymentID) async throws(PaymentError) {
        let (driver, peer) = try open(paymentID)
        try await driver.cancelPayment(paymentID, from: peer)
    }

    /// What became of a payment this daemon was shown, nil if none.
    public func status(of paymentID: PaymentID) -> PaymentBook.Entry? { payments.entry(paymentID) }

    /// The payments shown since the daemon started, newest first.
    public var shownPayments: [PaymentBook.Entry] { payments.all }

    private func open(_ paymentID: PaymentID) throws(PaymentError) -> (CustomerDriver, PeerID) {
        guard let driver = registration?.driver else { throw PaymentError(.notFound, "not receiving payments") }
        guard let entry = payments.entry(paymentID), !entry.status.isFinal, let peer = entry.peer else {
            throw PaymentError(.notFound, "no open payment \(paymentID)")
        }
        return (driver, peer)
    }

    private func record(_ event: CustomerEvent) {
        switch event {
        case .receivedPayment(let peer, let request): payments.add(request, from: peer)
        case .finishedPayment(_, let receipt): payments.update(receipt.paymentID, to: .finished, receipt: receipt)
        case .cancelled(_, let id, _): payments.update(id, to: .cancelled)
        case .error(_, let id?, let error):
            payments.update(id, to: error.code == .expired ? .expired : .failed(error.code))
        case .otherPaid(_, let id): payments.update(id, to: .otherPaid)
        case .error(_, nil, _), .disconnected: break
        }
        continuation.yield(event)
    }
}
