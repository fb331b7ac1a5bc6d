import BlepayDaemon
import BlepayPayments
import DBusKit
import Testing

/// A daemon stopping (SIGTERM) with payments open: each ends with an event, none is lost. What was only shown or
/// offered is cancelled and the other side is told; what the ledger is executing is waited for and finishes.
@Suite(.timeLimit(.minutes(1)))
struct ShutdownTests {
    @Test func aStoppingBusinessCancelsItsOpenRequest() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let businessEvents = try await fixture.events(.business)
        let id = try await fixture.shownRequest(customerEvents)

        await fixture.business.shutdown()
        let cancelled = try await customerEvents.next(.cancelled)
        #expect(cancelled.paymentID == id && cancelled.details.by == "business")
        #expect(try await businessEvents.next(.cancelled).paymentID == id)
        #expect(await fixture.business.sentPayments.map(\.status) == [.cancelled])
        #expect(fixture.ledger.executionCount == 0)
    }

    /// The request is withdrawn at the ledger before the business stops, however slowly the ledger answers: stopped
    /// first, the daemon cancelled the call on its way and the ledger kept the payment open until it expired.
    @Test func aStoppingBusinessWithdrawsItsRequestAtTheLedgerBeforeItStops() async throws {
        let fixture = try await ControlFixture(ledgerLatency: .milliseconds(500))
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let id = try await fixture.shownRequest(customerEvents)

        await fixture.business.shutdown()
        #expect(fixture.ledger.cancelled.map(\.description) == [id])
    }

    @Test func aStoppingBusinessLetsAnExecutingPaymentFinish() async throws {
        let fixture = try await ControlFixture(ledgerLatency: .seconds(1))
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let businessEvents = try await fixture.events(.business)
        let id = try await fixture.shownRequest(customerEvents)
        try await fixture.accept(id)
        _ = try await businessEvents.next(.accepted)

        await fixture.business.shutdown()
        // Stopped only once the ledger had answered.
        #expect(await fixture.business.sentPayments.map(\.status) == [.finished])
        #expect(try await businessEvents.next(.finished).paymentID == id)
        #expect(try await customerEvents.next(.finishedPayment).paymentID == id)
        #expect(fixture.ledger.executionCount == 1)
    }

    @Test func aStoppingCustomerDeclinesWhatItWasShown() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let businessEvents = try await fixture.events(.business)
        let id = try await fixture.shownRequest(customerEvents)

        await fixture.customer.shutdown()
        let cancelled = try await customerEvents.next(.cancelled)
        #expect(cancelled.paymentID == id && cancelled.details.by == "customer")
        _ = try await customerEvents.next(.disconnected)
        #expect(try await businessEvents.next(.declined).paymentID == id)
        #expect(await fixture.customer.shownPayments.map(\.status) == [.cancelled])
        #expect(fixture.ledger.executionCount == 0)
    }

    @Test func aStoppingCustomerWaitsForItsAcceptedPaymentsResult() async throws {
        let fixture = try await ControlFixture(ledgerLatency: .seconds(1))
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let id = try await fixture.shownRequest(customerEvents)
        try await fixture.accept(id)

        await fixture.customer.shutdown()
        #expect(await fixture.customer.shownPayments.map(\.status) == [.finished])
        #expect(try await customerEvents.next(.finishedPayment).paymentID == id)
        _ = try await customerEvents.next(.disconnected)
        #expect(fixture.ledger.executionCount == 1)
    }
}

extension ControlFixture {
    /// Starts receiving and sends a request of 25.50 USD; returns its id once the customer was shown it.
    func shownRequest(_ customerEvents: SignalQueue) async throws -> String {
        _ = try await call(.customer, "StartReceiving")
        let sent = try await call(.business, "SendPaymentRequest", [.uint64(2550), .string("USD"), .string("")])
        let id = try sent.arguments[0].decode(String.self)
        #expect(try await customerEvents.next(.receivedPayment).paymentID == id)
        return id
    }

    func accept(_ id: String) async throws {
        _ = try await call(
            .customer, "AcceptPayment",
            [.string(id), .uint64(2550), .uint64(0), .string("USD"), .string("card-1"), .boolean(false)])
    }
}
