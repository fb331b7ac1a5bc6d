import BlepayControl
import DBusKit

/// The business daemon as a till drives it: `sendPaymentRequest` offers a payment to every customer nearby, the
/// first valid acceptance wins; `events` follows them (`offered`, `accepted`, `finished`, `failed`, `cancelled`,
/// `expired`, …); `cancel` withdraws one.
public final class BusinessClient: Sendable {
    private let daemon: DaemonConnection

    /// The business daemon on `bus` (the system bus by default; `instance` when several share the host).
    public static func connect(to bus: DBusConnection.Bus = .system, instance: String? = nil)
        async throws(BlepayClientError) -> BusinessClient
    {
        BusinessClient(try await DaemonConnection.connect(.business, bus: bus, instance: instance))
    }

    private init(_ daemon: DaemonConnection) { self.daemon = daemon }

    /// The business's payment events from now on, for as long as the caller reads them.
    public func events() async throws(BlepayClientError) -> AsyncStream<ControlEvent> {
        try await daemon.events().stream
    }

    /// Sends a request for `amount` minor units of `currency` (ISO 4217), shown with `reference`; returns its
    /// payment id.
    public func sendPaymentRequest(amount: UInt64, currency: String, reference: String = "")
        async throws(BlepayClientError) -> String
    {
        try await daemon.value("SendPaymentRequest", [.uint64(amount), .string(currency), .string(reference)])
    }

    /// Withdraws an open request from every customer.
    public func cancel(_ paymentID: String) async throws(BlepayClientError) {
        _ = try await daemon.call("CancelPayment", [.string(paymentID)])
    }

    /// Where payment `paymentID` stands.
    public func status(of paymentID: String) async throws(BlepayClientError) -> ControlPayment {
        try await daemon.status(of: paymentID)
    }
}
