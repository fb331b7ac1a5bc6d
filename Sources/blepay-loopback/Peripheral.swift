import ArgumentParser
import BlueZ
import Foundation
import L2CAP
import Synchronization

/// Advertises the loopback service, echoes writes as notifications, and records who connected and
/// disconnected. Exits after the first central has connected and disconnected again.
struct Peripheral: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the echo service until a central has come and gone.")

    @OptionGroup var options: CommonOptions

    struct Report: Codable {
        var adapterAddress: String
        var connected: [String] = []
        var disconnected: [String] = []
        var writes: [Int] = []
        var notifiedBytes = 0
        var peakRSSKiB = 0
    }

    func run() async throws {
        let logger = options.makeLogger("blepay.loopback.peripheral")
        let session = try await BlueZSession.connect(logger: logger)
        let adapter = try session.adapter(named: options.adapter)
        try await adapter.setPowered(true)
        let report = Locked(Report(adapterAddress: adapter.address ?? "?"))
        let events = adapter.connectionEvents()

        let echo = Echo()
        let app = try await adapter.serve(
            GattApplication(services: [
                GattService(
                    uuid: LoopbackService.service,
                    characteristics: [
                        GattCharacteristic(uuid: LoopbackService.rx, flags: ["write"]) { value, request in
                            report.withLock { $0.writes.append(value.count) }
                            await echo.send(value, mtu: request.mtu ?? 23)
                        },
                        GattCharacteristic(uuid: LoopbackService.tx, flags: ["notify"]),
                        GattCharacteristic(
                            uuid: LoopbackService.rxCommands, flags: ["write-without-response"],
                            onOrderedWrite: { value, request in
                                report.withLock { $0.writes.append(value.count) }
                                Task { await echo.send(value, mtu: request.mtu ?? 23) }
                            }),
                    ])
            ]))
        await echo.attach(app)
        let listener = try options.l2capPSM.map { psm in
            try L2CAPListener(on: options.l2capAddress(adapter.address, type: adapter.addressType), psm: psm, receiveMTU: 512)
        }
        if let listener {
            // Each SDU straight back: the channel's own round trip, no GATT and no D-Bus.
            Task {
                for await channel in listener.channels {
                    Task { for await sdu in channel.incoming { try? await channel.send(sdu) } }
                }
            }
        }
        let advertisement = Advertisement(serviceUUIDs: [LoopbackService.service], localName: "blepay-loopback")
        let advertising = Locked<AdvertisementHandle?>(try await adapter.advertise(advertisement))
        logger.info("advertising", metadata: ["adapter": "\(adapter.name)", "address": "\(adapter.address ?? "?")"])
        print("peripheral: ready on \(adapter.name) \(adapter.address ?? "?")")

        let timeout = options.timeout
        let outcome = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                var writesAtConnect = 0
                for await event in events {
                    let address = event.device.address ?? event.device.path.rawValue
                    print("peripheral: \(event.connected ? "connected" : "disconnected") \(address)")
                    let served = report.withLock { r -> Bool in
                        if event.connected {
                            r.connected.append(address)
                            writesAtConnect = r.writes.count
                            return false
                        }
                        guard r.connected.contains(address) else { return false }
                        r.disconnected.append(address)
                        return r.writes.count > writesAtConnect
                    }
                    if served { return true }
                    // A central that left without exchanging anything (a connect it will retry): the controller
                    // stopped advertising when it connected, so advertise afresh.
                    if !event.connected {
                        await advertising.withLock { $0.take() }?.stop()
                        let again = try? await adapter.advertise(advertisement)
                        advertising.withLock { $0 = again }
                    }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        await advertising.withLock { $0.take() }?.stop()
        listener?.close()
        await app.stop()
        let final = report.withLock { r in
            r.notifiedBytes = echo.notifiedBytes
            r.peakRSSKiB = peakRSSKiB()
            return r
        }
        try options.write(final)
        if options.bench { print("bench: peripheral-peak-rss \(final.peakRSSKiB) KiB") }
        session.close()
        guard outcome else {
            throw LoopbackFailure("no central connected, wrote and disconnected within \(options.timeout) s")
        }
        print("peripheral: done, \(final.writes.count) writes echoed")
    }
}

/// Sends each written value back as notifications of at most MTU−3 bytes, in order.
final class Echo: Sendable {
    private let app = Mutex<GattApplicationHandle?>(nil)
    private let sent = Atomic<Int>(0)

    var notifiedBytes: Int { sent.load(ordering: .relaxed) }

    func attach(_ handle: GattApplicationHandle) async { app.withLock { $0 = handle } }

    func send(_ value: [UInt8], mtu: Int) async {
        guard let app = app.withLock({ $0 }) else { return }
        let chunk = max(20, mtu - 3)
        for start in stride(from: 0, to: value.count, by: chunk) {
            let part = Array(value[start..<min(value.count, start + chunk)])
            do {
                try await app.notify(LoopbackService.tx, part)
                sent.wrappingAdd(part.count, ordering: .relaxed)
            } catch {
                print("peripheral: notify failed: \(error)")
            }
        }
    }
}

/// The process's peak resident set size (VmHWM), in KiB.
func peakRSSKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
    return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
}

/// A value shared between tasks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}
