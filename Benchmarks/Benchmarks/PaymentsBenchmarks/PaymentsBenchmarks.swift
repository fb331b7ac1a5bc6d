import Benchmark
import BlepayPayments
import BlepayPaymentsTesting

/// One request offered to 20 in-memory customers, accepted by one, the other 19 told `otherPaid`: the drivers,
/// machines, codec and in-memory links without a radio, as the baseline for the same figure over BLE; and what a
/// business does with an acceptance while both sides are offline (`offlineAcceptKeep`).
let benchmarks: @Sendable () -> Void = {
    offlineAcceptKeep()
    Benchmark(
        "business-broadcast-20",
        configuration: .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(3))
    ) { benchmark in
        let scenario = try BroadcastScenario(customers: 20)
        // Connecting the customers is set-up; the payment is what is measured.
        _ = try await scenario.pay()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let outcome = try await scenario.pay()
            guard outcome.otherPaid == 19 else { throw WrongOutcome(otherPaid: outcome.otherPaid) }
        }
        benchmark.stopMeasurement()
    }
}

struct WrongOutcome: Error {
    let otherPaid: Int
}
