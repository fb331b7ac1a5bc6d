import CoreMetrics
import Prometheus

/// What the ledger counts for Prometheus: each request by method, route (its pattern, `/v1/payments/{id}`) and
/// status, and how long each route took. Kept in the server's own registry, which `GET /metrics` shows the operator.
struct LedgerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        factory = PrometheusMetricsFactory(registry: registry)
    }

    func answered(_ method: String, _ route: String, status: Int, after duration: Duration) {
        Counter(label: "blepay_ledger_requests_total",
            dimensions: [("method", method), ("route", route), ("status", "\(status)")], factory: factory).increment()
        Timer(label: "blepay_ledger_request_duration_seconds", dimensions: [("method", method), ("route", route)],
            factory: factory).recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
