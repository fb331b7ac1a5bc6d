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
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
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
                .product(name: "BlepayPaymentsTesting", package: blepay.lastPathComponent),
                .product(name: "BlepayDaemonStore", package: blepay.lastPathComponent),
            ],
            path: "Benchmarks/PaymentsBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Load over HTTP for the ledger (scripts/bench-ledger.sh): complete payments, and raw durable SQLite. It lives
        // outside Benchmarks/ because the benchmark plugin runs every executable there as a benchmark.
        .executableTarget(
            name: "LedgerLoad",
            dependencies: [
                .product(name: "BlepayLedgerClient", package: blepay.lastPathComponent),
                .product(name: "BlepayLedger", package: blepay.lastPathComponent),
                .product(name: "BlepayProtocol", package: blepay.lastPathComponent),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/LedgerLoad"
        ),
    ],
    swiftLanguageModes: [.v6]
)
