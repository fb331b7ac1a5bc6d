import BlepayPayments
import BlepayProtocol

/// A business and `customers` customers on an `InMemoryNetwork`: each `pay` offers one request to all of them,
/// the first customer accepts, and it returns once the business has its receipt and every other customer its
/// `otherPaid`. The in-memory baseline for the broadcast benchmark, and a test of the drivers end to end: requests
/// are signed by a merchant key its certificate names, acceptances by each customer's device key, and checked as the
/// daemons check them.
public final class BroadcastScenario {
    public struct Outcome: Sendable {
        public let receipt: Receipt
        public let otherPaid: Int
    }

    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }

    public let network: InMemoryNetwork
    public let ledger = InMemoryLedger()
    public let business: BusinessDriver
    private var customers: [(driver: CustomerDriver, peer: PeerID)] = []
    private var customerEvents: AsyncStream<(Int, CustomerEvent)>.Iterator
    private var businessEvents: AsyncStream<BusinessEvent>.Iterator
    private var tasks: [Task<Void, Never>] = []

    public init(customers count: Int, faults: InMemoryNetwork.Faults = .none) throws {
        // A payment here takes milliseconds, far from any expiry: a fixed time keeps the scenario pure.
        let now = Timestamp(millisecondsSince1970: 1_795_000_000_000)
        let clock: @Sendable () -> Timestamp = { now }
        let (ledgerKey, merchantKey) = (SigningKey(), SigningKey())
        let certificate = try MerchantCertificate(
            merchantID: "m_bench", merchantName: "Bench", signingKey: merchantKey.publicKey,
            noiseKey: SigningKey().publicKey, validFrom: now, validUntil: now.adding(milliseconds: 3_600_000),
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
        ).signed(by: ledgerKey)
        network = InMemoryNetwork(certificate: certificate, faults: faults)
        business = BusinessDriver(
            transport: network.business, ledger: ledger, signer: merchantKey,
            merchant: .init(id: certificate.merchantID, name: certificate.merchantName), clock: clock)
        businessEvents = business.events.makeAsyncIterator()
        let (merged, sink) = AsyncStream<(Int, CustomerEvent)>.makeStream()
        customerEvents = merged.makeAsyncIterator()
        tasks.append(Task { [business] in await business.run() })
        for index in 0..<count {
            let (transport, peer) = network.connectCustomer()
            let driver = CustomerDriver(transport: transport, signer: SigningKey(), clock: clock)
            customers.append((driver, peer))
            tasks.append(Task { await driver.run() })
            tasks.append(Task { for await event in driver.events { sink.yield((index, event)) } })
        }
    }

    deinit { tasks.forEach { $0.cancel() } }

    public func pay(minorUnits: UInt64 = 2550) async throws -> Outcome {
        let id = try await business.sendPaymentRequest(amount: Money(minorUnits: minorUnits, currency: Currency("EUR")), reference: nil).paymentID
        var received = 0
        while received < customers.count {
            guard case (_, .receivedPayment(_, let request))? = await customerEvents.next() else {
                throw Failed(description: "the customers' events ended")
            }
            if request.paymentID == id { received += 1 }
        }
        let winner = customers[0]
        try await winner.driver.acceptPayment(
            id, amount: Money(minorUnits: minorUnits, currency: Currency("EUR")),
            instrumentID: "card-1", delegatedInstrument: false)
        var otherPaid = 0, winnerFinished = false
        while otherPaid < customers.count - 1 || !winnerFinished {
            switch await customerEvents.next() {
            case (_, .otherPaid(_, id))?: otherPaid += 1
            case (0, .finishedPayment(_, let receipt))? where receipt.paymentID == id: winnerFinished = true
            case nil: throw Failed(description: "the customers' events ended")
            default: continue
            }
        }
        while let event = await businessEvents.next() {
            if case .finished(id, _, let receipt) = event { return Outcome(receipt: receipt, otherPaid: otherPaid) }
        }
        throw Failed(description: "the business's events ended")
    }
}
