import BlepayControl
import BlepayDaemon
import BlepayDaemonStore
import BlepayLedger
import BlepayPayments
import BlepayPaymentsTesting
import BlepayProtocol
import DBusKit
import DBusTestSupport
import Foundation
import LedgerTestSupport
import Testing
import TestSupport

/// Refunds as the daemons see them, against a real ledger: the business refunds and gets a ledger-signed receipt it
/// keeps; the customer learns of it at its next contact with the ledger, once, across restarts.
@Suite(.timeLimit(.minutes(2))) struct MerchantRefundTests {
    /// A payment of 25.50 with a 1.00 tip, paid at the ledger.
    static func paid(_ ledger: RunningLedger) async throws -> (merchant: RunningLedger.Party, customer: RunningLedger.Party, id: PaymentID) {
        let merchant = try await ledger.merchant()
        let customer = try await ledger.customer(balance: 10_000)
        let request = try ledger.request(by: merchant, amount: 2_550)
        _ = try await merchant.client.createPayment(request)
        _ = try await merchant.client.accept(try ledger.acceptance(of: request, by: customer, tip: 100), request: nil)
        return (merchant, customer, request.paymentID)
    }

    static func available(_ customer: RunningLedger.Party) async throws -> Int64? {
        try await customer.client.instruments().first?.balances.first { $0.currency == "EUR" }?.available
    }

    @Test func aRefundReachesTheCustomerOnceAndOutlivesItsRestart() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let (merchant, customer, id) = try await Self.paid(ledger)
            let trusted = TrustedLedgerKeys([ledger.server.ledgerKey.publicKey])
            let kept = PaymentHistory(store: try DaemonStore(path: try scratchFile("business.sqlite")))
            let refunds = MerchantRefunds(ledger: merchant.client, trusted: trusted, history: kept, logger: testLogger)
            let signalled = Recorder(refunds.events)

            let receipt = try await refunds.refund(id, minorUnits: 1_000, reason: "returned item", requestID: "r1")
            #expect(receipt.amount.minorUnits == 1_000 && receipt.refundedMinorUnits == 1_000)
            #expect(receipt.paidMinorUnits == 2_650 && receipt.reason == "returned item")
            #expect(receipt.payerKey == customer.key.publicKey && receipt.paymentID == id)
            try await signalled.contains("the refund signalled") { $0.refundID == receipt.refundID }
            #expect(try kept.recordRefund(HistoryRefund(receipt)) == false, "the refund was kept before it was answered")
            // The same request again is the same refund: nothing more moves.
            let again = try await refunds.refund(id, minorUnits: 1_000, reason: "returned item", requestID: "r1")
            #expect(again.refundID == receipt.refundID)
            #expect(try await Self.available(customer) == 10_000 - 2_650 + 1_000)
            // 16.50 is left: more is refused with its code, and nothing moves.
            do throws(PaymentError) {
                _ = try await refunds.refund(id, minorUnits: 1_651, reason: nil, requestID: "r2")
                Issue.record("a refund past the payment was made")
            } catch {
                #expect(error.code == .refundExceedsPayment)
            }
            #expect(try await Self.available(customer) == 8_350)

            // The customer learns of it at its next contact, once, and not again after a restart.
            let state = try scratchFile("customer.sqlite")
            func watch() throws -> RefundWatch {
                RefundWatch(
                    ledger: customer.client, trusted: trusted, deviceKey: customer.key.publicKey,
                    history: PaymentHistory(store: try DaemonStore(path: state)), logger: testLogger)
            }
            let first = try watch()
            let learnt = Recorder(first.events)
            #expect(await first.poll() == 1)
            try await learnt.contains("the refund learnt") { $0 == receipt }
            #expect(await first.poll() == 0)
            #expect(await (try watch()).poll() == 0)
            // The rest refunded later is learnt by the restarted daemon.
            let rest = try await refunds.refund(id, minorUnits: nil, reason: nil, requestID: "r3")
            #expect(rest.amount.minorUnits == 1_650 && rest.refundedMinorUnits == 2_650)
            #expect(await (try watch()).poll() == 1)
            #expect(try await Self.available(customer) == 10_000)
        }
    }

    /// A receipt signed by a key this customer does not trust (its configuration not yet updated for a rotation) is
    /// not taken, and is read again once the key is trusted: no refund is skipped.
    @Test func aRefundNoTrustedKeySignedIsReadAgainUntilItVerifies() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let (merchant, customer, id) = try await Self.paid(ledger)
            _ = try await merchant.client.refund(id, CreateRefund(amount: 500, reason: nil), idempotencyKey: "refund-1")
            let state = try scratchFile("customer.sqlite")
            func watch(trusting key: Key32) throws -> RefundWatch {
                RefundWatch(
                    ledger: customer.client, trusted: TrustedLedgerKeys([key]), deviceKey: customer.key.publicKey,
                    history: PaymentHistory(store: try DaemonStore(path: state)), logger: testLogger)
            }
            #expect(await (try watch(trusting: SigningKey().publicKey)).poll() == 0)
            #expect(try PaymentHistory(store: DaemonStore(path: state)).refundCursor() == nil)
            #expect(await (try watch(trusting: ledger.server.ledgerKey.publicKey)).poll() == 1)
        }
    }

    /// `RefundPayment` answers with the refund and its receipt and signals `refunded`; a refund past the payment is
    /// refused with its error name; `DailyReport` gives the day's takings as the ledger counts them.
    @Test func theBusinessRefundsAndReportsOverItsControlAPI() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let (merchant, _, id) = try await Self.paid(ledger)
            let bus = try TestBus()
            defer { bus.stop() }
            let network = InMemoryNetwork(certificate: testCertificate)
            defer { network.shutdown() }
            let service = BusinessService(
                links: BusinessService.Links(transport: network.business) { try await Task.sleep(for: .seconds(3600)) },
                ledger: InMemoryLedger(), signer: merchant.key, merchant: .init(id: merchant.account.id, name: "Café"),
                settings: .init(), clock: DaemonContext.systemClock, logger: testLogger)
            let refunds = MerchantRefunds(
                ledger: merchant.client, trusted: TrustedLedgerKeys([ledger.server.ledgerKey.publicKey]),
                history: PaymentHistory(store: try DaemonStore(path: try scratchFile("business.sqlite"))), logger: testLogger)
            let connection = try await bus.connect()
            let serving = Task { try? await BusinessControl.serve(service, on: connection, refunds: refunds, logger: testLogger) }
            defer { serving.cancel() }
            let payments = Task { await service.runPayments() }
            defer { payments.cancel() }
            let client = try await bus.connect()
            for _ in 0..<200 where try await client.nameOwner(ControlAPI.businessBusName) == nil {
                try await Task.sleep(for: .milliseconds(10))
            }
            let (name, path, interface) = ControlAPI.address(.business)
            func call(_ member: String, _ arguments: [DBusValue]) async throws(DBusError) -> [DBusValue] {
                try await client.call(destination: name, path: path, interface: interface, member: member, arguments: arguments)
                    .arguments
            }
            let signals = SignalQueue(try await client.signals(matching: DBusMatchRule(interface: interface, member: ControlAPI.eventSignal)))

            let refund = try ControlEntry(dbus: try await call("RefundPayment", [.string(id.description), .uint64(1_000), .string("returned item"), .string("till-1")])[0])
            #expect(refund.label == "refunded" && refund.details.amount == 1_000 && refund.details.refunded == 1_000)
            #expect(refund.details.currency == "EUR" && refund.details.reason == "returned item")
            let encoded = try #require(refund.details.receipt)
            let receipt = try RefundReceipt(encoded: [UInt8](try #require(Data(base64Encoded: encoded))))
            #expect(receipt.refundID == refund.name)
            let event = try await signals.next(.refunded)
            #expect(event.paymentID == id.description && event.details.refundID == refund.name)
            do throws(DBusError) {
                _ = try await call("RefundPayment", [.string(id.description), .uint64(5_000), .string(""), .string("till-2")])
                Issue.record("a refund past the payment was made")
            } catch {
                #expect(error.name == "org.blepay.Error.RefundExceedsPayment")
            }

            let today = Date().formatted(.iso8601.year().month().day())
            let report = try ControlReport(dbus: try await call("DailyReport", [.string(today), .string("UTC")]))
            let eur = try #require(report.currencies.first { $0.currency == "EUR" })
            #expect(report.merchantID == merchant.account.id && report.date == today && report.timeZone == "UTC")
            #expect(eur.count == 1 && eur.gross == 2_550 && eur.tips == 100 && eur.refundCount == 1 && eur.refunds == 1_000)
            #expect(eur.net == 1_650)
            // Left empty, the day is today and the zone the daemon's own.
            let defaulted = try ControlReport(dbus: try await call("DailyReport", [.string(""), .string("")]))
            #expect(defaulted.date == Date().formatted(Date.ISO8601FormatStyle(timeZone: .current).year().month().day()))
            #expect(defaulted.timeZone == TimeZone.current.identifier)
            do throws(DBusError) {
                _ = try await call("DailyReport", [.string(""), .string("Mars/Olympus")])
                Issue.record("an unknown time zone was taken")
            } catch {
                #expect(error.name == "org.blepay.Error.InvalidArguments")
            }
            do throws(DBusError) {
                _ = try await call("DailyReport", [.string("yesterday"), .string("UTC")])
                Issue.record("a malformed date was taken")
            } catch {
                #expect(error.name == "org.blepay.Error.InvalidArguments")
            }
        }
    }
}
