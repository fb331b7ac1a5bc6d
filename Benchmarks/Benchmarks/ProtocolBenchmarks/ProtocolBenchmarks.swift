import Benchmark
import BlepayProtocol
import Foundation

/// blepay's codec against Foundation's JSON on the same structures, and what a complete online payment costs on air.
let benchmarks: @Sendable () -> Void = {
    let timed = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], scalingFactor: .kilo, maxDuration: .seconds(3))
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()

    /// Encode and decode, 1,000 times per iteration.
    func roundTrips(_ name: String, _ body: @escaping @Sendable () throws -> Any) {
        Benchmark(name, configuration: timed) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try body()) }
        }
    }
    roundTrips("codec-payment-request") { try PaymentRequest(encoded: Fixtures.request.encoded) }
    roundTrips("json-payment-request") {
        try decoder.decode(SynthesizedRequest.self, from: encoder.encode(SynthesizedRequest(Fixtures.request))).model
    }
    roundTrips("json-compact-payment-request") {
        try decoder.decode(CompactRequest.self, from: encoder.encode(CompactRequest(Fixtures.request))).model
    }
    roundTrips("codec-payment-acceptance") { try PaymentAcceptance(encoded: Fixtures.acceptance.encoded) }
    roundTrips("json-payment-acceptance") {
        try decoder.decode(SynthesizedAcceptance.self, from: encoder.encode(SynthesizedAcceptance(Fixtures.acceptance)))
            .model
    }
    roundTrips("json-compact-payment-acceptance") {
        try decoder.decode(CompactAcceptance.self, from: encoder.encode(CompactAcceptance(Fixtures.acceptance))).model
    }
    Benchmark("online-payment-session", configuration: .init(metrics: [.wallClock, .throughput], maxDuration: .seconds(3))) {
        benchmark in
        for _ in benchmark.scaledIterations { blackHole(try OnlinePayment.run()) }
    }

    // Sizes and packet counts: the same every iteration, reported as custom metrics.
    let sizes: [(String, () throws -> Int)] = [
        ("codec-payment-request-bytes", { Fixtures.request.encoded.count }),
        ("json-payment-request-bytes", { try encoder.encode(SynthesizedRequest(Fixtures.request)).count }),
        ("json-compact-payment-request-bytes", { try encoder.encode(CompactRequest(Fixtures.request)).count }),
        ("codec-payment-acceptance-bytes", { Fixtures.acceptance.encoded.count }),
        ("json-payment-acceptance-bytes", { try encoder.encode(SynthesizedAcceptance(Fixtures.acceptance)).count }),
        ("json-compact-payment-acceptance-bytes", { try encoder.encode(CompactAcceptance(Fixtures.acceptance)).count }),
        ("online-payment-att-packets-mtu23", { try OnlinePayment.airUse(mtu: 23).packets }),
        ("online-payment-att-bytes-mtu23", { try OnlinePayment.airUse(mtu: 23).bytes }),
        ("online-payment-att-packets-mtu517", { try OnlinePayment.airUse(mtu: 517).packets }),
        ("online-payment-att-bytes-mtu517", { try OnlinePayment.airUse(mtu: 517).bytes }),
        ("offline-payment-att-packets-mtu23", { try OnlinePayment.airUse(mtu: 23, offline: true).packets }),
        ("offline-payment-att-bytes-mtu23", { try OnlinePayment.airUse(mtu: 23, offline: true).bytes }),
        ("offline-payment-att-packets-mtu517", { try OnlinePayment.airUse(mtu: 517, offline: true).packets }),
        ("offline-payment-att-bytes-mtu517", { try OnlinePayment.airUse(mtu: 517, offline: true).bytes }),
    ]
    for (name, measure) in sizes {
        let metric = BenchmarkMetric.custom(name, polarity: .prefersSmaller, useScalingFactor: false)
        Benchmark(name, configuration: .init(metrics: [metric], maxIterations: 3)) { benchmark in
            benchmark.measurement(metric, try measure())
        }
    }
}
