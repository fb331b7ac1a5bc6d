import BlepayPayments
import BlepayProtocol
import DBusKit
import Logging

/// `org.blepay.Business1` at `/org/blepay/Business`, owned as `org.blepay.Business` (or
/// `org.blepay.Business.<instance>`): send a payment request to every connected customer, cancel it, look payments
/// up, what waits for settlement, and every payment's events as `PaymentEvent` signals.
public enum BusinessControl {
    /// Exports the object, owns the bus name, and relays the service's events as signals until they end or the
    /// calling task is cancelled; then releases the name.
    public static func serve(
        _ service: BusinessService, on connection: DBusConnection, name: String = ControlAPI.businessBusName,
        logger: Logger, ready: @Sendable () -> Void = {}
    ) async throws(DBusError) {
        let handle = try await connection.export(ControlAPI.businessPath, interfaces: [interface(service)])
        try await ControlAPI.serve(
            handle, as: name, on: connection, interface: ControlAPI.businessInterface, events: service.events,
            signal: { ControlEvent($0).signalArguments }, logger: logger, ready: ready)
    }

    private static func interface(_ service: BusinessService) -> DBusInterface {
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
        ]) { $1 }.merging(ControlAPI.settlementHandlers(service.offlineSettlement)) { $1 })
    }
}
