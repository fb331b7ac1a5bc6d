// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "blepay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DBusKit", targets: ["DBusKit"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .executable(name: "blepay-loopback", targets: ["blepay-loopback"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
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
        .target(name: "DBusTestSupport", dependencies: ["DBusKit"], path: "Tests/DBusTestSupport"),
        .testTarget(name: "DBusKitTests", dependencies: ["DBusKit", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBusKit", "DBusTestSupport"]),
        .testTarget(name: "RigTests", dependencies: []),
    ],
    swiftLanguageModes: [.v6]
)
