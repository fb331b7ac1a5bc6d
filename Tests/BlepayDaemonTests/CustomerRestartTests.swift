import BlepayDaemon
import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import LedgerTestSupport
import TestSupport
import Testing

/// A customer daemon gone between its acceptance and the result: the next one, over the same state file, seeks the
/// payment again (at the real ledger, and from the merchant's business) and reports the ledger-signed outcome.
@Suite(.timeLimit(.minutes(2))) struct CustomerRestartTests {
    @Test func aCustomerRestartedAfterAcceptingLearnsWhatBecameOfThePayment() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let clock = DaemonContext.systemClock
            let merchant = try await ledger.merchant()
            let customer = try await ledger.customer(balance: 10_000)
            let card = try #require(customer.instrument?.id)
            // Every message takes 300 ms: the customer is gone before the business's result reaches it.
            let network = InMemoryNetwork(
                certificate: certificate(merchantID: merchant.account.id, signingKey: merchant.key.publicKey),
                faults: .init(delay: .milliseconds(300)))
            defer { network.shutdown() }
            let business = BusinessService(
                links: BusinessService.Links(transport: network.business) { try await Task.sleep(for: .seconds(3600)) },
                ledger: LedgerBackend(client: merchant.client), signer: merchant.key,
                merchant: .init(id: merchant.account.id, name: merchant.account.name), settings: .init(), clock: clock,
                logger: testLogger)
            let payments = Task { await business.runPayments() }
            defer { payments.cancel() }
            let state = try scratchFile("customer-state.sqlite")
            func phone() throws -> CustomerService {
                CustomerService(
                    links: {
                        let (transport, _) = network.connectCustomer()
                        return CustomerService.Links(transport: transport) { try await Task.sleep(for: .seconds(3600)) }
                    },
                    signer: customer.key, ledger: LedgerBackend(client: customer.client),
                    accepted: StoredAcceptances(
                        store: AcceptedPaymentStore(store: try DaemonStore(path: state)), clock: clock, logger: testLogger),
                    clock: clock, logger: testLogger)
            }

            let first = try phone()
            let heard = Recorder(first.events)
            await first.startReceiving()
            let amount = try Money(minorUnits: 2550, currency: Currency("EUR"))
            let id = try await business.request(amount: amount, reference: "order-1")
            try await heard.contains("the request shown") {
                if case .receivedPayment(_, let r) = $0 { r.paymentID == id } else { false }
            }
            try await first.accept(id, amount: amount, tipMinorUnits: 100, instrumentID: card, delegated: false)
            await first.stopReceiving()
            try await heard.contains("outcome-unknown") {
                if case .error(_, id, let error) = $0 { error.code == .outcomeUnknown } else { false }
            }
            let kept = try AcceptedPaymentStore(store: DaemonStore(path: state)).entries()
            #expect(kept.map(\.request.paymentID) == [id])

            let second = try phone()
            let found = Recorder(second.events)
            await second.startReceiving()
            let receipt = try await found.first("the outcome found", within: .seconds(30)) { event -> Receipt? in
                if case .outcomeFound(_, id, .success(let receipt)) = event { receipt } else { nil }
            }
            #expect(receipt.status == .settled && receipt.payerKey == customer.key.publicKey)
            #expect(receipt.amount == amount && receipt.tipMinorUnits == 100)
            let ledgerKey = try Key32(Hex.decode(try await ledger.admin.ledgerKey().publicKey, limit: 32) ?? [])
            let pair = try #require(kept.first)
            #expect(throws: Never.self) {
                try receipt.verify(paying: pair.request, with: pair.acceptance, trusting: TrustedLedgerKeys([ledgerKey]))
            }
            #expect(try AcceptedPaymentStore(store: DaemonStore(path: state)).entries().isEmpty)
            await second.stopReceiving()
            #expect(try await ledger.server.audit().isEmpty)
        }
    }
}
