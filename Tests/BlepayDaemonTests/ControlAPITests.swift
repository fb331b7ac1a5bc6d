import BlepayControl
import BlepayDaemon
import BlepayDaemonConfiguration
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Testing

/// The control API on a real (private) dbus-daemon: the reference SDK's calls and events end to end between the
/// two daemons' services, joined by the in-memory network; and bad calls refused with stable error names.
@Suite(.timeLimit(.minutes(1)))
struct ControlAPITests {
    @Test func aRequestIsShownAcceptedAndFinishedOnBothSides() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let businessEvents = try await fixture.events(.business)

        _ = try await fixture.call(.customer, "StartReceiving")
        let receiving = try await fixture.client.call(
            destination: ControlAPI.customerBusName, path: ControlAPI.customerPath,
            interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(ControlAPI.customerInterface), .string("Receiving")])
        #expect(receiving.arguments.first?.unwrapped == .boolean(true))

        let sent = try await fixture.call(.business, "SendPaymentRequest", [.uint64(2550), .string("USD"), .string("order-123")])
        let id = try sent.arguments[0].decode(String.self)
        let shown = try await customerEvents.next(.receivedPayment)
        #expect(shown.paymentID == id)
        #expect(shown.details.amount == 2550 && shown.details.currency == "USD")
        #expect(shown.details.reference == "order-123")
        #expect(shown.details.merchantName == "Café")

        _ = try await fixture.call(
            .customer, "AcceptPayment", [.string(id), .uint64(2550), .uint64(100), .string("USD"), .string("card-1"), .boolean(false)])
        let finished = try await customerEvents.next(.finishedPayment)
        #expect(finished.paymentID == id && finished.details.tip == 100)
        let done = try await businessEvents.next(.finished)
        #expect(done.paymentID == id && done.details.amount == 2550)
        #expect(fixture.ledger.executionCount == 1)

        let list = try await fixture.call(.business, "ListPayments")
        let entries = try list.arguments[0].decode([DBusValue].self)
        guard case .structure(let fields)? = entries.first else { Issue.record("no payment listed"); return }
        #expect(fields[0] == .string(id) && fields[1] == .string("finished"))
        let status = try await fixture.call(.customer, "PaymentStatus", [.string(id)])
        guard case .structure(let shownFields)? = status.arguments.first else { Issue.record("no status"); return }
        #expect(shownFields[1] == .string("finished"))
    }

    @Test func eitherSideCanCancel() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let customerEvents = try await fixture.events(.customer)
        let businessEvents = try await fixture.events(.business)
        _ = try await fixture.call(.customer, "StartReceiving")

        let first = try await fixture.call(.business, "SendPaymentRequest", [.uint64(500), .string("EUR"), .string("")])
        let firstID = try first.arguments[0].decode(String.self)
        _ = try await customerEvents.next(.receivedPayment)
        _ = try await fixture.call(.business, "CancelPayment", [.string(firstID)])
        let byBusiness = try await customerEvents.next(.cancelled)
        #expect(byBusiness.paymentID == firstID && byBusiness.details.by == "business")

        let second = try await fixture.call(.business, "SendPaymentRequest", [.uint64(700), .string("EUR"), .string("")])
        let secondID = try second.arguments[0].decode(String.self)
        _ = try await customerEvents.next(.receivedPayment)
        _ = try await fixture.call(.customer, "CancelPayment", [.string(secondID)])
        let byCustomer = try await customerEvents.next(.cancelled)
        #expect(byCustomer.paymentID == secondID && byCustomer.details.by == "customer")
        let declined = try await businessEvents.next(.declined)
        #expect(declined.paymentID == secondID)
        #expect(fixture.ledger.executionCount == 0)

        _ = try await fixture.call(.customer, "StopReceiving")
        _ = try await customerEvents.next(.disconnected)
    }

    @Test func badCallsAreRefusedWithStableNames() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        func refusal(_ role: DaemonConfiguration.Role, _ member: String, _ arguments: [DBusValue]) async -> String? {
            do {
                _ = try await fixture.call(role, member, arguments)
                return nil
            } catch {
                return error.name
            }
        }
        let unknown = String(repeating: "ab", count: 16)
        #expect(await refusal(.business, "SendPaymentRequest", [.uint64(0), .string("EUR"), .string("")])
            == "org.blepay.Error.InvalidArguments")
        #expect(await refusal(.business, "SendPaymentRequest", [.uint64(100), .string("XYZ"), .string("")])
            == "org.blepay.Error.InvalidArguments")
        #expect(await refusal(.business, "SendPaymentRequest", [.string("100")]) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(await refusal(.business, "CancelPayment", [.string("not-an-id")]) == "org.blepay.Error.InvalidArguments")
        #expect(await refusal(.business, "CancelPayment", [.string(unknown)]) == "org.blepay.Error.NotFound")
        #expect(await refusal(.customer, "AcceptPayment",
            [.string(unknown), .uint64(1), .uint64(0), .string("EUR"), .string("card"), .boolean(false)])
            == "org.blepay.Error.NotFound")
        #expect(await refusal(.customer, "PaymentStatus", [.string(unknown)]) == "org.blepay.Error.NotFound")
    }

    /// The daemon starts receiving before its control object exists: `Receiving` must say so from the first read.
    @Test func receivingIsTrueForADaemonThatStartedReceiving() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let network = InMemoryNetwork(certificate: testCertificate)
        let service = CustomerService(
            links: { CustomerService.Links(transport: network.connectCustomer().transport) {} },
            signer: SigningKey(), clock: { fixedNow }, logger: testLogger)
        await service.startReceiving()
        let (server, client) = (try await bus.connect(), try await bus.connect())
        let serving = Task {
            try await CustomerControl.serve(
                service, on: server, wallet: .init(list: { [] }, addCard: { _, _, _, _ in "" }),
                vouchers: try testVouchers(), clock: { fixedNow }, logger: testLogger)
        }
        defer { serving.cancel() }
        for _ in 0..<200 where try await client.nameOwner(ControlAPI.customerBusName) == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        let receiving = try await client.call(
            destination: ControlAPI.customerBusName, path: ControlAPI.customerPath,
            interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(ControlAPI.customerInterface), .string("Receiving")])
        #expect(receiving.arguments.first?.unwrapped == .boolean(true))
    }
}
