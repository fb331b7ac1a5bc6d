import CoreMetrics
import BlepayDaemonConfiguration

/// What a daemon counts, for Prometheus (`docs/operations.md` lists the series): its payments' events, how long a
/// payment took from request to result, sessions that failed before a payment (by code), whether the ledger
/// answers, and what waits for settlement. Recorded through the factory the daemon was given, never a global one.
public struct DaemonMetrics: Sendable {
    let factory: any MetricsFactory
    let role: String

    public init(factory: any MetricsFactory, role: DaemonConfiguration.Role) {
        self.factory = factory
        self.role = role.rawValue
    }

    /// Records nothing.
    public static func none(_ role: DaemonConfiguration.Role) -> DaemonMetrics {
        DaemonMetrics(factory: NOOPMetricsHandler.instance, role: role)
    }

    func paymentEvent(_ kind: String) {
        Counter(label: "blepay_payment_events_total", dimensions: [("role", role), ("event", kind)], factory: factory)
            .increment()
    }

    /// From the request's creation to its result.
    func paid(afterMilliseconds milliseconds: UInt64) {
        Timer(label: "blepay_payment_duration_seconds", dimensions: [("role", role)], factory: factory)
            .recordMilliseconds(Int64(clamping: milliseconds))
    }

    /// A session with another device that failed before any payment (a handshake, a certificate, a frame).
    func sessionFailed(code: String) {
        Counter(label: "blepay_session_failures_total", dimensions: [("role", role), ("code", code)], factory: factory)
            .increment()
    }

    func ledgerReachable(_ reachable: Bool) {
        Gauge(label: "blepay_ledger_reachable", dimensions: [("role", role)], factory: factory).record(reachable ? 1 : 0)
    }

    /// Payments taken offline that wait for the ledger, and how long the oldest has waited.
    func settlementWaiting(count: Int, oldestAgeSeconds: Double) {
        Gauge(label: "blepay_settlement_waiting", dimensions: [("role", role)], factory: factory).record(count)
        Gauge(label: "blepay_settlement_oldest_age_seconds", dimensions: [("role", role)], factory: factory)
            .record(oldestAgeSeconds)
    }
}
