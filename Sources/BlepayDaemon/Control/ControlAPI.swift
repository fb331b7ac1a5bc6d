import BlepayLedger
import BlepayPayments
import BlepayProtocol
import DBusKit
import Foundation
import Logging
import ServiceLifecycle

/// The daemons' control API on the system bus (`docs/control-api.md`): names, paths, and how payments, events and
/// errors are spelled in D-Bus values. Interfaces are versioned like BlueZ's: a breaking change is a new `…2`.
public enum ControlAPI {
    public static let customerBusName = "org.blepay.Customer"
    public static let businessBusName = "org.blepay.Business"
    public static let customerInterface = "org.blepay.Customer1"
    public static let businessInterface = "org.blepay.Business1"
    public static let customerPath: DBusObjectPath = "/org/blepay/Customer"
    public static let businessPath: DBusObjectPath = "/org/blepay/Business"
    /// A daemon's well-known name: `org.blepay.Customer`, or `org.blepay.Customer.<instance>` when several
    /// customer daemons share a host (likewise for businesses).
    public static func busName(_ role: DaemonConfiguration.Role, instance: String? = nil) -> String {
        let base = role == .customer ? customerBusName : businessBusName
        return instance.map { "\(base).\($0)" } ?? base
    }

    /// Where a daemon of `role` answers: its bus name, object path and interface.
    public static func address(_ role: DaemonConfiguration.Role, instance: String? = nil)
        -> (name: String, path: DBusObjectPath, interface: String)
    {
        let name = busName(role, instance: instance)
        return role == .customer ? (name, customerPath, customerInterface) : (name, businessPath, businessInterface)
    }

    /// Owns `name` for the exported object, calls `ready`, and relays each event as a `PaymentEvent` signal on
    /// `interface` until the events end or the calling task is cancelled; then, once the control API's graceful
    /// shutdown comes (or the task is cancelled), releases the name and unexports.
    static func serve<Event: Sendable>(
        _ handle: DBusObjectHandle, as name: String, on connection: DBusConnection, interface: String,
        events: AsyncStream<Event>, signal: (Event) -> [DBusValue], logger: Logger, ready: @Sendable () -> Void
    ) async throws(DBusError) {
        do {
            try await connection.requestName(name)
        } catch {
            await handle.unexport()
            throw error
        }
        ready()
        logger.info("control API ready", metadata: ["name": "\(name)"])
        for await event in events {
            do {
                try handle.emitSignal(interface: interface, member: eventSignal, arguments: signal(event))
            } catch {
                logger.warning("a payment event could not be signalled", metadata: ["error": "\(error)"])
            }
        }
        // The last event is out; the name is kept, for status calls, until the control API's turn to stop.
        try? await gracefulShutdown()
        try? await connection.releaseName(name)
        await handle.unexport()
    }

    /// `PaymentEvent(s kind, s payment_id, a{sv} details)`: `ControlEvent`.
    public static let eventSignal = "PaymentEvent"
    public static let eventSignature: DBusSignature = "ssa{sv}"
    static let eventArgumentNames = ["kind", "payment_id", "details"]
    static let errorPrefix = "org.blepay.Error."

    /// A refusal as the caller sees it: `org.blepay.Error.<Code>` (`InsufficientFunds`, `NotFound`, …) and the
    /// stable code name first in the message.
    static func error(_ error: PaymentError) -> DBusError {
        let name = error.code.name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        return .reply(name: errorPrefix + name, error.description)
    }

    static func invalidArgument(_ message: String) -> DBusError {
        .reply(name: errorPrefix + "InvalidArguments", "invalid-arguments: \(message)")
    }

    static func paymentID(_ text: String) throws(DBusError) -> PaymentID {
        guard text.count == 32, let bytes = Hex.decode(text, limit: 16), let id = try? PaymentID(bytes: bytes) else {
            throw invalidArgument("a payment id is 32 hex digits")
        }
        return id
    }

    static func money(_ minorUnits: UInt64, _ currency: String) throws(DBusError) -> Money {
        guard minorUnits > 0 else { throw invalidArgument("an amount is more than 0") }
        do {
            return try Money(minorUnits: minorUnits, currency: Currency(currency))
        } catch {
            throw invalidArgument(error.message)
        }
    }
}
