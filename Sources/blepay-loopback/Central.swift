import ArgumentParser
import BlueZ
import Foundation

/// Finds the loopback peripheral by service UUID, connects, subscribes, writes each payload and checks that
/// every byte comes back by notification; then disconnects.
struct Central: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Connect to the echo service and check every byte.")

    @OptionGroup var options: CommonOptions

    @Option(help: "Payload sizes to write, in bytes.")
    var sizes: String = "1,20,400"

    @Option(help: "How many write → notification round trips to time after the checks (bench).")
    var roundTrips: Int = 0

    struct Exchange: Codable {
        var size: Int
        var sent: String
        var received: String
    }

    struct Report: Codable {
        var adapterAddress: String
        var peerAddress: String
        var mtu: Int
        var connectAttempts: Int
        var exchanges: [Exchange] = []
        var roundTripsTimed = 0
    }

    func run() async throws {
        let logger = options.makeLogger("blepay.loopback.central")
        let sizes = self.sizes.split(separator: ",").compactMap { Int($0) }
        guard !sizes.isEmpty, sizes.allSatisfy({ (1...508).contains($0) }) else {
            throw ValidationError("--sizes takes sizes from 1 to 508 bytes")
        }
        let session = try await BlueZSession.connect(logger: logger)
        let adapter = try session.adapter(named: options.adapter)
        try await adapter.setPowered(true)
        let filter = DiscoveryFilter(serviceUUIDs: [LoopbackService.service])
        try await adapter.setDiscoveryFilter(filter)
        let (device, connection, discovered, attempts) = try await connect(adapter, filter, timeout: options.timeout)
        print("central: connected after \(attempts) attempt(s), services resolved")

        let rx = try await device.characteristic(service: LoopbackService.service, characteristic: LoopbackService.rx)
        let tx = try await device.characteristic(service: LoopbackService.service, characteristic: LoopbackService.tx)
        var notifications = try await tx.notifications().makeAsyncIterator()
        var report = Report(
            adapterAddress: adapter.address ?? "?", peerAddress: device.address ?? "?", mtu: rx.mtu ?? 0,
            connectAttempts: attempts)

        func roundTrip(_ value: [UInt8]) async throws -> [UInt8] {
            try await rx.write(value, type: .request)
            var received: [UInt8] = []
            while received.count < value.count {
                guard let chunk = await notifications.next() else {
                    throw LoopbackFailure("notifications ended after \(received.count) of \(value.count) bytes")
                }
                received += chunk
            }
            return received
        }

        var failures: [String] = []
        for (index, size) in sizes.enumerated() {
            let sent = payload(size: size, seed: index)
            let received = try await roundTrip(sent)
            report.exchanges.append(Exchange(size: size, sent: hex(sent), received: hex(received)))
            let verdict = received == sent ? "ok" : "MISMATCH"
            if received != sent { failures.append("\(size) B") }
            print("central: \(size) B echoed \(verdict) (mtu \(rx.mtu ?? 0))")
        }

        var rtts: [Double] = []
        for i in 0..<roundTrips {
            let sent = payload(size: 20, seed: 1000 + i)
            let start = ContinuousClock.now
            let received = try await roundTrip(sent)
            rtts.append(milliseconds(start.duration(to: .now)))
            if received != sent { failures.append("round trip \(i)") }
        }
        report.roundTripsTimed = rtts.count

        try await device.disconnect()
        print("central: disconnected")
        try options.write(report)
        if options.bench {
            print("bench: discovery-to-connected \(format(milliseconds(discovered.duration(to: connection.connected)))) ms")
            print("bench: connected-to-services-resolved \(format(milliseconds(connection.connected.duration(to: connection.servicesResolved)))) ms")
            if !rtts.isEmpty {
                print("bench: write-notify-rtt-p50 \(format(percentile(rtts, 0.50))) ms")
                print("bench: write-notify-rtt-p95 \(format(percentile(rtts, 0.95))) ms")
                print("bench: write-notify-round-trips \(rtts.count) count")
            }
        }
        session.close()
        guard failures.isEmpty else { throw LoopbackFailure("bytes differ for \(failures.joined(separator: ", "))") }
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Nearest-rank percentile.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[max(0, min(sorted.count - 1, rank - 1))]
}
