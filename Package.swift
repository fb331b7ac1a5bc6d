// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "blepay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DBusKit", targets: ["DBusKit"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "Noise", targets: ["Noise"]),
        .library(name: "BlepayProtocol", targets: ["BlepayProtocol"]),
        .library(name: "BlepayPayments", targets: ["BlepayPayments"]),
        .library(name: "BlepayLedger", targets: ["BlepayLedger"]),
        .executable(name: "blepay-loopback", targets: ["blepay-loopback"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // libdbus-1, with the macros Swift cannot import re-exported as constants.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // The only module that touches libdbus.
        .target(
            name: "DBusKit",
            dependencies: [
                "CDBus",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Typed org.bluez on top of DBusKit.
        .target(
            name: "BlueZ",
            dependencies: [
                "DBusKit",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // GATT loopback peer used by the virtual BLE rig tests and benchmarks.
        .executableTarget(
            name: "blepay-loopback",
            dependencies: [
                "BlueZ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The Noise Protocol Framework (Noise_XX_25519_ChaChaPoly_SHA256) on swift-crypto.
        .target(
            name: "Noise",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The blepay GATT protocol: messages, binary codec, framing to the ATT MTU, certificates, signatures and
        // the encrypted session. Pure: no BlueZ, no D-Bus.
        .target(
            name: "BlepayProtocol",
            dependencies: ["Noise", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Customer and business payment state machines, the error taxonomy and the transport and ledger
        // boundaries, drivers and in-memory doubles. No I/O; clock injected.
        .target(name: "BlepayPayments", dependencies: ["BlepayProtocol"]),
        // The reference ledger's domain: instruments, the double-entry journal. Pure.
        .target(
            name: "BlepayLedger",
            dependencies: ["BlepayProtocol", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(name: "DBusTestSupport", dependencies: ["DBusKit"], path: "Tests/DBusTestSupport"),
        // Seeded randomness and hex for the pure tiers' tests.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "DBusKitTests", dependencies: ["DBusKit", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBusKit", "DBusTestSupport"]),
        .testTarget(
            name: "NoiseTests",
            dependencies: ["Noise", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Vectors"]
        ),
        .testTarget(name: "BlepayProtocolTests", dependencies: ["BlepayProtocol", "TestSupport"], exclude: ["Vectors"]),
        .testTarget(name: "BlepayPaymentsTests", dependencies: ["BlepayPayments", "TestSupport"]),
        .testTarget(
            name: "BlepayLedgerTests",
            dependencies: ["BlepayLedger", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "RigTests", dependencies: []),
    ],
    swiftLanguageModes: [.v6]
)
