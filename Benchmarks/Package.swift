// swift-tools-version:6.1
// blepay's benchmarks (`make bench`), a package of their own so that `make test` never builds the harness.
import Foundation
import PackageDescription

// The blepay package is the parent folder; SwiftPM names a path dependency after its folder.
let blepay = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent()

let package = Package(
    name: "blepay-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: blepay.path),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "ProtocolBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "BlepayProtocol", package: blepay.lastPathComponent),
            ],
            path: "Benchmarks/ProtocolBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PaymentsBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "BlepayPayments", package: blepay.lastPathComponent),
            ],
            path: "Benchmarks/PaymentsBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
