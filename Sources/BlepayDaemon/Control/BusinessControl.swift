import BlepayControl
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import DBusKit
import Foundation
import Logging

/// `org.blepay.Business1` at `/org/blepay/Business`, owned as `org.blepay.Business` (or
/// `org.blepay.Business.<instance>`): send a payment request to every connected customer, cancel it, look payments
/// up, refund them, the day's takings, what waits for settlement, and every payment's events as `PaymentEvent`
/// signals.
public enum BusinessControl {
    /// Exports the object, owns the bus name, and relays the service's events (and the refunds made, if this
    /// business makes them) as signals until they end or the calling task is cancelled; then releases the name.
    public static func serve(
        _ service: BusinessService, on connection: DBusConnection, name: String = ControlAPI.businessBusName,
        refunds: MerchantRefunds? = nil, logger: Logger, ready: @Sendable () -> Void = {}
    ) async throws(DBusError) {
        let handlers = refunds.map(refundHandlers) ?? [:]
        let handle = try await connection.export(ControlAPI.businessPath, interfaces: [interface(service, more: handlers)])
        let (signals, relay) = AsyncStream<ControlEvent>.makeStream()
        async let relayed: Void = relayEvents(of: service, refunds, into: relay)
        try await ControlAPI.serve(
            handle, as: name, on: connection, interface: ControlAPI.businessInterface, events: signals,
            signal: \.signalArguments, logger: logger, ready: ready)
        await relayed
    }

    /// The service's events, and the refunds made, until the service's events end.
    private static func relayEvents(
        of service: BusinessService, _ refunds: MerchantRefunds?, into relay: AsyncStream<ControlEvent>.Continuation
    ) async {
        await withTaskGroup(of: Void.self) { group in
            if let refunds {
                group.addTask { for await refund in refunds.events { relay.yield(ControlEvent(refund: refund)) } }
            }
            for await event in service.events { relay.yield(ControlEvent(event)) }
            group.cancelAll()
        }
        relay.finish()
    }

    /// `RefundPayment` and `DailyReport`, through the ledger.
    private static func refundHandlers(_ refunds: MerchantRefunds) -> [String: DBusMethod.Handler] {
        [
            "RefundPayment": { call in
                let a = call.arguments
                let id = try ControlAPI.paymentID(a[0].decode(String.self))
                let (units, reason, requestID) = (try a[1].decode(UInt64.self), try a[2].decode(String.self), try a[3].decode(String.self))
                guard units <= Money.maximumMinorUnits else { throw ControlAPI.invalidArgument("the amount is too large") }
                guard (1...64).contains(requestID.utf8.count), requestID.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw ControlAPI.invalidArgument("a request id is 1 to 64 printable ASCII characters")
                }
                do throws(PaymentError) {
                    // The amount is in the payment's currency, which the ledger knows; 0 refunds what is left.
                    let receipt = try await refunds.refund(
                        id, minorUnits: units == 0 ? nil : units, reason: reason.isEmpty ? nil : reason, requestID: requestID)
                    return [HistoryRefund(receipt).controlValue]
                } catch { throw ControlAPI.error(error) }
            },
            "DailyReport": { call in
                let (given, zone) = (try call.arguments[0].decode(String.self), try call.arguments[1].decode(String.self))
                // Empty means this host's zone and today in it: time zones need the system's zone data, which a
                // caller as thin as blepayctl does not link.
                guard let timeZone = zone.isEmpty ? TimeZone.current : TimeZone(identifier: zone) else {
                    throw ControlAPI.invalidArgument("a time zone is an IANA name, not \(zone)")
                }
                let date = given.isEmpty
                    ? Date().formatted(Date.ISO8601FormatStyle(timeZone: timeZone).year().month().day()) : given
                guard date.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil else {
                    throw ControlAPI.invalidArgument("a day is YYYY-MM-DD, not \(date)")
                }
                // A zone given is passed on as given: the report names it as the caller did.
                let name = zone.isEmpty ? timeZone.identifier : zone
                do throws(PaymentError) {
                    return ControlReport(try await refunds.dailyReport(date: date, timeZone: name)).dbusValues
                } catch { throw ControlAPI.error(error) }
            },
        ]
    }

    private static func interface(_ service: BusinessService, more: [String: DBusMethod.Handler]) -> DBusInterface {
        let payments = ControlAPI.paymentHandlers(
            status: { await service.status(of: $0) }, list: { await service.sentPayments }, history: service.history?.history,
            unknown: "this daemon sent no payment")
        return ControlAPI.interface(.business, handlers: payments.merging([
            "SendPaymentRequest": { call in
                let a = call.arguments
                let amount = try ControlAPI.money(a[0].decode(UInt64.self), a[1].decode(String.self))
                let reference = try a[2].decode(String.self)
                do throws(PaymentError) {
                    let id = try await service.request(amount: amount, reference: reference.isEmpty ? nil : reference)
                    return [.string(id.description)]
                } catch { throw ControlAPI.error(error) }
            },
            "CancelPayment": { call in
                let id = try ControlAPI.paymentID(call.arguments[0].decode(String.self))
                do throws(PaymentError) { try await service.cancel(id) } catch { throw ControlAPI.error(error) }
                return []
            },
        ]) { $1 }.merging(ControlAPI.settlementHandlers(service.offlineSettlement)) { $1 }.merging(more) { $1 })
    }
}
