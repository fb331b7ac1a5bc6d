// swift-tools-version:6.1
import PackageDescription

// What blepayctl links imports FoundationEssentials, never Foundation (whose ICU data alone is 34 MB, linked statically):
// members of a module are visible only where it is imported, so Foundation cannot slip in through a dependency.
let foundationFree: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

// How programs are linked, for a smaller start:
// - The Swift runtime linked in statically asks the linker to export every symbol of the executable (44,000-49,000 in
//   the daemons), which nothing loads against; yet at every start the runtime's `dladdr` of itself walks that whole
//   table (about 3 MB more resident, 6 % more instructions before main). Programs export nothing.
// - A position-independent program has its loader apply some 135,000 relative relocations at every start, 3.2 MB of
//   table read in 24-byte entries. GNU ld packs them (DT_RELR, glibc 2.36) into 27 KB; gold cannot, and lld takes a
//   symbol from the first archive that defines it, which pulls Foundation and its 34 MB of ICU data into blepayctl.
//   The program stays position-independent, so its addresses are still randomized.
// - Start-up touches code all over the binary, and the kernel maps the 64 KB around each page it faults in: most of
//   the peak RSS. Release builds put each function in a section of its own (Makefile, RELEASE), and
//   `scripts/order/PROGRAM.ld` lays out the functions the program ran when profiled together, ahead of the rest
//   (`scripts/order-functions.sh` writes them).
// And hardened as distributions harden theirs: full RELRO (`-z now`, and `scripts/relro.ld`, without which GNU ld
// leaves `.rodata`, the GOT and `.data.rel.ro` writable) and a non-executable stack.
func programLinking(order program: String? = nil) -> [LinkerSetting] {
    let scripts = "\(Context.packageDirectory)/scripts"
    let flags = [
        "-use-ld=bfd", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
        "-Xlinker", "-z", "-Xlinker", "now", "-Xlinker", "-z", "-Xlinker", "noexecstack",
        "-Xlinker", "-T", "-Xlinker", "\(scripts)/relro.ld",
    ]
    guard let program else { return [.unsafeFlags(flags)] }
    return [
        .unsafeFlags(flags),
        .unsafeFlags(["-Xlinker", "-T", "-Xlinker", "\(scripts)/order/\(program).ld"], .when(configuration: .release)),
    ]
}

let package = Package(
    name: "blepay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DBusKit", targets: ["DBusKit"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "Noise", targets: ["Noise"]),
        .library(name: "BlepayProtocol", targets: ["BlepayProtocol"]),
        .library(name: "BlepayPayments", targets: ["BlepayPayments"]),
        .library(name: "BlepayPaymentsTesting", targets: ["BlepayPaymentsTesting"]),
        .library(name: "BlepayBLE", targets: ["BlepayBLE"]),
        .library(name: "BlepayLedger", targets: ["BlepayLedger"]),
        .library(name: "BlepayLedgerStore", targets: ["BlepayLedgerStore"]),
        .library(name: "BlepayConfiguration", targets: ["BlepayConfiguration"]),
        .library(name: "BlepayLedgerServer", targets: ["BlepayLedgerServer"]),
        .library(name: "BlepayLedgerClient", targets: ["BlepayLedgerClient"]),
        .library(name: "BlepayDaemonStore", targets: ["BlepayDaemonStore"]),
        .library(name: "BlepayControl", targets: ["BlepayControl"]),
        .library(name: "BlepayDaemonConfiguration", targets: ["BlepayDaemonConfiguration"]),
        .library(name: "BlepayDaemon", targets: ["BlepayDaemon"]),
        .library(name: "BlepayClient", targets: ["BlepayClient"]),
        .executable(name: "blepay-ledger", targets: ["blepay-ledger"]),
        .executable(name: "blepayd", targets: ["blepayd"]),
        .executable(name: "blepayctl", targets: ["blepayctl"]),
        .executable(name: "blepay-loopback", targets: ["blepay-loopback"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
    ],
    targets: [
        // blepay's version and the commit each binary is built from.
        .target(name: "BlepayVersion", plugins: ["VersionStamp"]),
        .plugin(name: "VersionStamp", capability: .buildTool()),
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
            ],
            swiftSettings: foundationFree
        ),
        // Typed org.bluez on top of DBusKit.
        .target(
            name: "BlueZ",
            dependencies: [
                "DBusKit",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // GATT and L2CAP loopback peer used by the virtual BLE rig tests and benchmarks.
        .executableTarget(
            name: "blepay-loopback",
            dependencies: [
                "BlueZ", "L2CAP", "BlepayVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: programLinking()
        ),
        // The Noise Protocol Framework (Noise_XX_25519_ChaChaPoly_SHA256) on swift-crypto.
        .target(
            name: "Noise",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: foundationFree
        ),
        // The blepay GATT protocol: messages, binary codec, framing to the ATT MTU, certificates, signatures and
        // the encrypted session. Pure: no BlueZ, no D-Bus.
        .target(
            name: "BlepayProtocol",
            dependencies: ["Noise", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: foundationFree
        ),
        // Customer and business payment state machines, the error taxonomy, the transport and ledger boundaries
        // and the drivers. No I/O; clock injected.
        .target(name: "BlepayPayments", dependencies: ["BlepayProtocol"]),
        // In-memory network, ledger and broadcast scenario for tests and benchmarks; never linked by the daemons.
        .target(name: "BlepayPaymentsTesting", dependencies: ["BlepayPayments", "BlepayProtocol"]),
        // libbluetooth's L2CAP socket API, with what Swift cannot import (sockaddr_l2, BT_* options) as helpers.
        .systemLibrary(
            name: "CBluetooth",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        // Packet sockets: LE credit-based L2CAP channels over kernel sockets (a listener, outgoing channels, whole
        // SDUs both ways), and the GATT sockets bluetoothd hands a client, carried the same way.
        .target(name: "L2CAP", dependencies: ["CBluetooth"]),
        // The payment transport over BlueZ: the customer's GATT server and advertisement, the business's scanner
        // and GATT client, one protocol link per connection.
        .target(
            name: "BlepayBLE",
            dependencies: [
                "BlueZ", "DBusKit", "BlepayPayments", "BlepayProtocol", "L2CAP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The reference ledger's domain: instruments, the double-entry journal. Pure.
        .target(
            name: "BlepayLedger",
            dependencies: ["BlepayProtocol", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The ledger's durable storage: one SQL transaction interface with SQLite (GRDB; WAL, synchronous FULL,
        // group commit) and PostgreSQL (postgres-nio) behind it, and the ledger's operations written once over it.
        .target(
            name: "BlepayLedgerStore",
            dependencies: [
                "BlepayLedger",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A daemon's durable state: one SQLite file (GRDB) in its state directory, migrated in one transaction per
        // version; the customer's vouchers and the uses signed against them.
        .target(
            name: "BlepayDaemonStore",
            dependencies: ["BlepayProtocol", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // Settings files (TOML, one error line naming file and key) and secret files, for every blepay program.
        .target(
            name: "BlepayConfiguration", dependencies: [.product(name: "TOMLKit", package: "TOMLKit")],
            swiftSettings: foundationFree),
        // Long-running services under systemd: journald logging at a reloadable level, SIGHUP as a reload.
        .target(
            name: "BlepayService",
            dependencies: [
                "BlepayConfiguration",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]),
        // The ledger's HTTP API (Hummingbird): authentication, idempotency, routes, background expiry, config.
        .target(
            name: "BlepayLedgerServer",
            dependencies: [
                "BlepayLedgerStore",
                "BlepayConfiguration",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemons' client of the ledger's HTTP API (async-http-client): signed requests, durable idempotency keys,
        // safe retries, errors mapped to the payment error taxonomy.
        .target(
            name: "BlepayLedgerClient",
            dependencies: [
                "BlepayConfiguration",
                "BlepayLedger",
                "BlepayPayments",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemons' control API as callers see it: names, methods, introspection and the values they carry. What
        // blepayctl and apps link; no daemon machinery.
        .target(name: "BlepayControl", dependencies: ["DBusKit", "BlepayProtocol"], swiftSettings: foundationFree),
        // A daemon's settings file, read by the daemon and by blepayctl (the ledger keys receipts are checked with).
        .target(
            name: "BlepayDaemonConfiguration", dependencies: ["BlepayConfiguration", "BlepayControl", "BlepayProtocol"],
            swiftSettings: foundationFree),
        // The daemons' parts: device keys and enrollment, the customer and business services, and their D-Bus
        // control API.
        .target(
            name: "BlepayDaemon",
            dependencies: [
                "BlepayBLE", "BlepayConfiguration", "BlepayControl", "BlepayDaemonConfiguration", "BlepayDaemonStore",
                "BlepayLedgerClient", "BlueZ", "DBusKit",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "blepayd",
            dependencies: [
                "BlepayDaemon", "BlepayConfiguration", "BlepayControl", "BlepayDaemonConfiguration", "DBusKit", "BlepayVersion",
                "BlepayService", .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: programLinking(order: "blepayd")
        ),
        // An app's client of the daemons, in the reference SDK's shape, over their control API.
        .target(name: "BlepayClient", dependencies: ["BlepayControl", "DBusKit"], swiftSettings: foundationFree),
        .executableTarget(
            name: "blepayctl",
            dependencies: [
                "BlepayControl", "BlepayDaemonConfiguration", "BlepayProtocol", "DBusKit", "BlepayVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: foundationFree,
            linkerSettings: programLinking(order: "blepayctl")
        ),
        .executableTarget(
            name: "blepay-ledger",
            dependencies: [
                "BlepayLedgerServer",
                "BlepayLedgerStore",
                "BlepayVersion",
                "BlepayService",
                "BlepayConfiguration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: programLinking(order: "blepay-ledger")
        ),
        .target(name: "DBusTestSupport", dependencies: ["DBusKit"], path: "Tests/DBusTestSupport"),
        // Seeded randomness, hex, and the built executables for the tests.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "DBusKitTests", dependencies: ["DBusKit", "DBusTestSupport"]),
        .testTarget(name: "L2CAPTests", dependencies: ["L2CAP"]),
        .testTarget(
            name: "BlepayServiceTests",
            dependencies: ["BlepayService", "TestSupport", .product(name: "NIOPosix", package: "swift-nio")]),
        .testTarget(
            name: "BlepayDaemonStoreTests",
            dependencies: [
                "BlepayDaemonStore", "BlepayProtocol", "TestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBusKit", "DBusTestSupport", "BlueZTestSupport", "TestSupport"]),
        // A stand-in for bluetoothd 5.66 on a private bus, for the BlueZ and BLE tiers.
        .target(name: "BlueZTestSupport", dependencies: ["DBusKit", "DBusTestSupport"], path: "Tests/BlueZTestSupport"),
        .testTarget(
            name: "BlepayBLETests",
            dependencies: [
                "BlepayBLE", "BlueZ", "DBusKit", "DBusTestSupport", "BlueZTestSupport", "TestSupport", "BlepayPayments",
                "BlepayProtocol", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NoiseTests",
            dependencies: ["Noise", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Vectors"]
        ),
        .testTarget(name: "BlepayProtocolTests", dependencies: ["BlepayProtocol", "TestSupport"], exclude: ["Vectors"]),
        .testTarget(name: "BlepayPaymentsTests", dependencies: ["BlepayPayments", "BlepayPaymentsTesting", "TestSupport"]),
        .testTarget(
            name: "BlepayLedgerTests",
            dependencies: ["BlepayLedger", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "BlepayLedgerStoreTests",
            dependencies: ["BlepayLedgerStore", "LedgerTestSupport"]
        ),
        .testTarget(
            name: "BlepayLedgerServerTests",
            dependencies: [
                "BlepayLedgerServer", "BlepayConfiguration", "BlepayLedgerClient", "LedgerTestSupport", "TestSupport",
            ]
        ),
        .testTarget(
            name: "BlepayDaemonTests",
            dependencies: [
                "BlepayDaemon", "BlepayDaemonStore", "BlepayConfiguration", "BlepayControl", "BlepayDaemonConfiguration",
                "BlepayLedgerServer", "LedgerTestSupport", "BlueZ", "BlueZTestSupport", "BlepayClient",
                "DBusTestSupport", "TestSupport", "BlepayPaymentsTesting", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // A private PostgreSQL database per test, a real ledger server on a free port, and keys, devices and signed
        // messages for ledger and daemon tests.
        .target(
            name: "LedgerTestSupport",
            dependencies: [
                "BlepayLedgerStore", "BlepayLedgerServer", "BlepayLedgerClient", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/LedgerTestSupport"
        ),
        .testTarget(name: "RigTests", dependencies: ["BlepayControl", "BlepayDaemonConfiguration", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
