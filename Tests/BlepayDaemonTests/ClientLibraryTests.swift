import BlepayClient
import BlepayControl
import Testing
import TestSupport

/// `BlepayClient` against both daemons' control objects on a private bus: an app's whole payment, in the reference
/// SDK's shape.
@Suite(.timeLimit(.minutes(1)))
struct ClientLibraryTests {
    /// The next event of `kind`, skipping others.
    static func next(_ kind: ControlEvent.Kind, _ events: inout AsyncStream<ControlEvent>.Iterator) async -> ControlEvent? {
        while let event = await events.next() { if event.kind == kind { return event } }
        return nil
    }

    @Test func anAppRegistersIsShownARequestPaysItAndStops() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let customer = try await CustomerClient.connect(to: .address(fixture.bus.address))
        let business = try await BusinessClient.connect(to: .address(fixture.bus.address))
        var customerEvents = try await customer.register().makeAsyncIterator()
        var businessEvents = try await business.events().makeAsyncIterator()

        let id = try await business.sendPaymentRequest(amount: 2550, currency: "EUR", reference: "order-7")
        let shown = await Self.next(.receivedPayment, &customerEvents)
        #expect(shown?.paymentID == id && shown?.details.amount == 2550 && shown?.details.reference == "order-7")
        try await customer.accept(id, amount: 2550, currency: "EUR", tip: 50, instrument: "card-1")
        let finished = await Self.next(.finishedPayment, &customerEvents)
        #expect(finished?.paymentID == id && finished?.details.tip == 50)
        #expect(await Self.next(.finished, &businessEvents)?.paymentID == id)
        #expect(try await customer.status(of: id).status == "finished")

        // A refusal keeps its stable code.
        await #expect(throws: BlepayClientError.self) { try await customer.accept(id, amount: 1, currency: "EUR", instrument: "card-1") }
        do {
            try await business.cancel("not a payment id")
            Issue.record("an invalid id was taken")
        } catch {
            #expect(error.code == "invalid-arguments", "\(error)")
        }

        // Stopping ends the registration's stream, after what was signalled before it.
        try await customer.stop()
        var after: [ControlEvent] = []
        while let event = await customerEvents.next() { after.append(event) }
        #expect(!after.contains { $0.kind == .receivedPayment }, "\(after)")
    }

    @Test func aDaemonThatIsNotRunningIsUnreachable() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let client = try await CustomerClient.connect(to: .address(fixture.bus.address), instance: "elsewhere")
        do {
            _ = try await client.register()
            Issue.record("registered with a daemon that is not there")
        } catch {
            #expect(error.code == "daemon-unreachable", "\(error)")
        }
    }
}
