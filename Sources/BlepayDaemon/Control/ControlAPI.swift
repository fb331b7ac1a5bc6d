import BlepayPayments
import BlepayControl
import BlepayProtocol
import DBusKit
import Foundation
import Logging
import ServiceLifecycle

/// How the daemons serve the control API (`BlepayControl` spells it): owning the name, relaying events, and
/// turning payment errors and bad arguments into D-Bus refusals.
extension ControlAPI {
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

    /// A refusal as the caller sees it: `org.blepay.Error.<Code>` and the stable code name first in the message.
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
