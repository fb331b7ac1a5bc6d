import ArgumentParser
import BlepayVersion
import BlueZ
import Foundation
import L2CAP
import Logging

/// blepay-loopback: a GATT (and optionally L2CAP) echo peripheral and a central that checks it, over real BlueZ. The virtual BLE
/// rig runs the two (on two adapters of one host, or on two hosts) to prove the BlueZ layer end to end,
/// and to measure it; and a hostile central (`storm`) that the customer daemon and bluetoothd must outlive.
@main
struct Loopback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blepay-loopback",
        abstract: "GATT echo peripheral, checking central and hostile central over BlueZ.",
        version: BlepayVersion.line,
        subcommands: [Peripheral.self, Central.self, Storm.self])
}

/// The test service: the central writes to `rx` (write with response only) or `rxCommands` (write-without-response,
/// through a socket from bluetoothd), the peripheral echoes every value back on `tx` (notify) in MTU−3 chunks.
enum LoopbackService {
    static let service = "6e2d0001-5b1a-4c8e-9d4a-b1e9a7000001"
    static let rx = "6e2d0002-5b1a-4c8e-9d4a-b1e9a7000001"
    static let tx = "6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001"
    static let rxCommands = "6e2d0004-5b1a-4c8e-9d4a-b1e9a7000001"
}

struct CommonOptions: ParsableArguments {
    @Option(help: "Adapter to use, e.g. hci0.")
    var adapter: String

    @Option(help: "Write a JSON report to this file.")
    var report: String?

    @Option(help: "Give up after this many seconds.")
    var timeout: Int = 120

    @Flag(help: "Print 'bench: <name> <value> <unit>' lines.")
    var bench = false

    @Option(help: "Also echo over an LE credit-based L2CAP channel at this PSM (128-255), beside GATT.")
    var l2capPSM: UInt16?

    /// An LE address of BlueZ's, as the kernel's sockets take it; an adapter without an address type is public.
    func l2capAddress(_ address: String?, type: String?) throws -> L2CAPAddress {
        guard let address, let local = L2CAPAddress(address, bluezType: type ?? "public") else {
            throw LoopbackFailure("no LE address for an L2CAP channel: \(address ?? "?") (\(type ?? "?"))")
        }
        return local
    }

    func makeLogger(_ label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = ProcessInfo.processInfo.environment["BLEPAY_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
        return logger
    }

    func write<T: Encodable>(_ value: T) throws {
        guard let report else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(value).write(to: URL(fileURLWithPath: report))
    }
}

/// Fails the command with a message and exit code 1.
struct LoopbackFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Deterministic test data: each payload differs from every other size and position.
func payload(size: Int, seed: Int) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 31) &+ (seed &* 7) &+ ($0 >> 8)) }
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

func format(_ value: Double) -> String { String(format: "%.2f", value) }
