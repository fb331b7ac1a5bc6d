import BlepayControl
import DBusKit
import Synchronization

/// The customer daemon as a customer app drives it: `register` starts receiving payment requests and gives their
/// events (`receivedPayment`, then one of `finishedPayment`, `cancelled`, `error`, `otherPaid`; `disconnected` when
/// a link closes) until `stop`; `accept` and `cancel` answer what was shown.
public final class CustomerClient: Sendable {
    private let daemon: DaemonConnection
    private let registration = Mutex<EventStream?>(nil)

    /// The customer daemon on `bus` (the system bus by default; `instance` when several share the host).
    public static func connect(to bus: DBusConnection.Bus = .system, instance: String? = nil)
        async throws(BlepayClientError) -> CustomerClient
    {
        CustomerClient(try await DaemonConnection.connect(.customer, bus: bus, instance: instance))
    }

    private init(_ daemon: DaemonConnection) { self.daemon = daemon }

    /// Starts receiving payment requests; the stream gives every payment event from now until `stop()`, which
    /// ends it. A registration stays active for many payments; registering again ends the previous stream.
    public func register() async throws(BlepayClientError) -> AsyncStream<ControlEvent> {
        let events = try await daemon.events()  // subscribed before receiving starts, so no event falls in between
        do {
            _ = try await daemon.call("StartReceiving")
        } catch {
            events.finish()
            throw error
        }
        registration.withLock { $0 }?.finish()
        registration.withLock { $0 = events }
        return events.stream
    }

    /// Accepts payment `paymentID` as `receivedPayment` showed it: `amount` and `currency` must be the request's,
    /// `tip` is on top, paid with `instrument` (a managed instrument's id, or with `delegated` one the app's own).
    public func accept(
        _ paymentID: String, amount: UInt64, currency: String, tip: UInt64 = 0, instrument: String, delegated: Bool = false
    ) async throws(BlepayClientError) {
        _ = try await daemon.call("AcceptPayment", [
            .string(paymentID), .uint64(amount), .uint64(tip), .string(currency), .string(instrument), .boolean(delegated),
        ])
    }

    /// Declines payment `paymentID`; the business hears `declined`.
    public func cancel(_ paymentID: String) async throws(BlepayClientError) {
        _ = try await daemon.call("CancelPayment", [.string(paymentID)])
    }

    /// Stops receiving payment requests, and ends the registration's stream.
    public func stop() async throws(BlepayClientError) {
        _ = try await daemon.call("StopReceiving")
        registration.withLock { registration in
            registration?.finish()
            registration = nil
        }
    }

    /// Where payment `paymentID` stands (`open`, `accepted`, `finished`, …).
    public func status(of paymentID: String) async throws(BlepayClientError) -> ControlPayment {
        try await daemon.status(of: paymentID)
    }
}
