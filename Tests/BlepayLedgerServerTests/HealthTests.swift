import BlepayLedgerServer
import BlepayLedgerStore
import Foundation
import LedgerTestSupport
import Synchronization
import Testing

/// `/v1/health` tells a load balancer or systemd whether the ledger can answer: once, it said ok with its database
/// gone.
@Suite struct HealthTests {
    @Test(arguments: StorageKind.allCases)
    func healthIsOkOnlyWhileTheDatabaseAnswers(kind: StorageKind) async throws {
        let (ledger, storage) = try await RunningLedger.watched(kind)
        do {
            let up = try await ledger.raw("GET", "/v1/health")
            #expect(up.status == 200 && up.body == Array(#"{"status":"ok"}"#.utf8))
            storage.unavailable.store(true, ordering: .relaxed)
            let down = try await ledger.raw("GET", "/v1/health")
            #expect(down.status == 503 && down.error?.code == "storage.unavailable")
            storage.unavailable.store(false, ordering: .relaxed)
            #expect(try await ledger.raw("GET", "/v1/health").status == 200)
        } catch {
            try? await ledger.stop()
            throw error
        }
        try await ledger.stop()
    }
}

/// What the ledger counts, as the operator's Prometheus scrapes it with the admin token.
@Suite struct LedgerMetricsTests {
    @Test func requestsAreCountedByRouteAndStatusAndOnlyTheOperatorReadsThem() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            for _ in 0..<3 { _ = try await ledger.raw("GET", "/v1/health") }
            _ = try await ledger.raw("GET", "/v1/payments/00000000000000000000000000000000/refunds")
            let anonymous = try await ledger.raw("GET", "/metrics")
            #expect(anonymous.status == 401 && anonymous.error?.code == "auth.unauthenticated")
            let token = try LedgerServer.adminToken(ledger.server.configuration)
            let scraped = try await ledger.raw("GET", "/metrics", headers: [("Authorization", "Bearer \(token)")])
            let text = String(decoding: scraped.body, as: UTF8.self)
            #expect(scraped.status == 200)
            #expect(text.contains(#"blepay_ledger_requests_total{method="GET",route="/v1/health",status="200"} 3"#), "\(text)")
            #expect(text.contains(#"blepay_ledger_requests_total{method="GET",route="/v1/payments/{id}/refunds",status="401"} 1"#))
            #expect(text.contains("blepay_ledger_request_duration_seconds_bucket"))
        }
    }
}
