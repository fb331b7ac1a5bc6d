import ArgumentParser
import BlueZ
import Foundation
import L2CAP

/// Finds the loopback peripheral by service UUID, connects, subscribes, writes each payload and checks that
/// every byte comes back by notification; then disconnects.
struct Central: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Connect to the echo service and check every byte.")

    @OptionGroup var options: CommonOptions

    @Option(help: "Payload sizes to write, in bytes.")
    var sizes: String = "1,20,400"

    @Option(help: "How many write → notification round trips to time after the checks (bench).")
    var roundTrips: Int = 0

    @Flag(help: "Then the same through bluetoothd's GATT sockets: write commands (AcquireWrite), notifications (AcquireNotify).")
    var gattSockets = false

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

        let rtts = try await timedRoundTrips(roundTrips, seed: 1000, named: "round trip", failures: &failures, roundTrip)
        report.roundTripsTimed = rtts.count
        var socketRTTs: [Double]?
        if gattSockets {
            try await tx.stopNotifications()
            socketRTTs = try await socketRoundTrips(device, tx: tx, sizes: sizes, failures: &failures)
        }
        var channelRTTs: [Double]?
        if let psm = options.l2capPSM {
            channelRTTs = try await l2capRoundTrips(adapter, device, psm: psm, sizes: sizes, failures: &failures)
        }

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
            if let socketRTTs, !socketRTTs.isEmpty {
                print("bench: gatt-sockets-rtt-p50 \(format(percentile(socketRTTs, 0.50))) ms")
                print("bench: gatt-sockets-rtt-p95 \(format(percentile(socketRTTs, 0.95))) ms")
                print("bench: gatt-sockets-round-trips \(socketRTTs.count) count")
            }
            if let channelRTTs, !channelRTTs.isEmpty {
                print("bench: l2cap-sdu-rtt-p50 \(format(percentile(channelRTTs, 0.50))) ms")
                print("bench: l2cap-sdu-rtt-p95 \(format(percentile(channelRTTs, 0.95))) ms")
                print("bench: l2cap-sdu-round-trips \(channelRTTs.count) count")
            }
        }
        session.close()
        guard failures.isEmpty else { throw LoopbackFailure("bytes differ for \(failures.joined(separator: ", "))") }
    }
}

extension Central {
    /// Over an L2CAP channel on the same connection: each size echoed whole and checked, then `roundTrips` timed
    /// 20-byte SDUs, as the GATT ones are.
    func l2capRoundTrips(_ adapter: Adapter, _ device: Device, psm: UInt16, sizes: [Int], failures: inout [String])
        async throws -> [Double]
    {
        let channel = try await L2CAPChannel.connect(
            from: options.l2capAddress(adapter.address, type: adapter.addressType),
            to: options.l2capAddress(device.address, type: device.addressType ?? ""), psm: psm, receiveMTU: 512,
            timeout: .seconds(10))
        defer { channel.close() }
        return try await packetRoundTrips(
            over: channel.packets, named: "over L2CAP (PSM \(psm))", seed: 2000, sizes: sizes, failures: &failures)
    }

    /// Through the sockets bluetoothd hands a GATT client: write commands to `rxCommands`, `tx`'s notifications.
    func socketRoundTrips(_ device: Device, tx: RemoteCharacteristic, sizes: [Int], failures: inout [String])
        async throws -> [Double]
    {
        let rx = try await device.characteristic(service: LoopbackService.service, characteristic: LoopbackService.rxCommands)
        let sockets = try await RemoteCharacteristic.acquireSockets(writingTo: rx, notifiedBy: tx)
        let channel = try PacketChannel(
            reading: sockets.notify, writing: sockets.write, receiveMTU: sockets.mtu, sendMTU: sockets.mtu - 3,
            peer: "\(device.path)", threadName: "loopback-gatt")
        defer { channel.close() }
        return try await packetRoundTrips(
            over: channel, named: "through GATT sockets", seed: 4000, sizes: sizes, failures: &failures)
    }

    /// Each size echoed over `packets` (whole, or in notifications of MTU−3 bytes) and checked, then `roundTrips`
    /// timed 20-byte values, as the GATT ones over D-Bus are.
    func packetRoundTrips(
        over packets: PacketChannel, named name: String, seed: Int, sizes: [Int], failures: inout [String]
    ) async throws -> [Double] {
        var incoming = packets.incoming.makeAsyncIterator()
        func roundTrip(_ value: [UInt8]) async throws -> [UInt8] {
            try await packets.send(value)
            var received: [UInt8] = []
            while received.count < value.count {
                guard let chunk = await incoming.next() else { throw LoopbackFailure("closed \(name)") }
                received += chunk
            }
            return received
        }
        for (index, size) in sizes.enumerated() {
            let sent = payload(size: size, seed: seed + index)
            let verdict = try await roundTrip(sent) == sent ? "ok" : "MISMATCH"
            if verdict != "ok" { failures.append("\(size) B \(name)") }
            print("central: \(size) B echoed \(verdict) \(name) (send MTU \(packets.sendMTU))")
        }
        return try await timedRoundTrips(
            roundTrips, seed: seed + 1000, named: "round trip \(name)", failures: &failures, roundTrip)
    }
}

/// `count` timed round trips of 20 bytes each, in milliseconds; a mismatch is added to `failures` by its `name`.
func timedRoundTrips(
    _ count: Int, seed: Int, named name: String, failures: inout [String],
    _ roundTrip: ([UInt8]) async throws -> [UInt8]
) async throws -> [Double] {
    var rtts: [Double] = []
    for i in 0..<count {
        let sent = payload(size: 20, seed: seed + i)
        let start = ContinuousClock.now
        let received = try await roundTrip(sent)
        rtts.append(milliseconds(start.duration(to: .now)))
        if received != sent { failures.append("\(name) \(i)") }
    }
    return rtts
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Nearest-rank percentile.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    let rank = Int((p * Double(sorted.count)).rounded(.up))
    return sorted[max(0, min(sorted.count - 1, rank - 1))]
}
