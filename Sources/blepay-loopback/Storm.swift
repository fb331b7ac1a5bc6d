import ArgumentParser
import BlueZ

/// A hostile central, for the rig: connects to a peripheral's service again and again and, on each connection,
/// writes a value no peer may send (by default a fragment of an unknown record type) back to back, each as soon as
/// the last was answered, until one is refused (the peripheral is hanging up) or finds the link gone; then it
/// disconnects. The rig checks that bluetoothd and the peripheral's daemon outlive the storm. With
/// `--through-refusals` it keeps writing until the peripheral has closed the link: a write then pending in bluetoothd
/// is what BlueZ 5.66 crashes on (`docs/rig.md`).
struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Connect again and again, writing a malformed value until hung up each time.")

    @OptionGroup var options: CommonOptions

    @Option(help: "The service to find (UUID).")
    var service: String

    @Option(help: "The characteristic to write with response (UUID).")
    var characteristic: String

    @Option(help: "How many connections.")
    var connections: Int = 10

    @Option(help: "The value written, in hex.")
    var value: String = "8000ff"

    @Flag(help: "Keep writing through refusals until the link is gone (BlueZ 5.66 may then crash: docs/rig.md).")
    var throughRefusals = false

    /// A peripheral that has not hung up after this many writes on one connection fails the storm.
    static let writeLimit = 1000

    struct Report: Codable {
        var connections = 0
        var connectAttempts = 0
        /// Writes answered, and writes refused (the peripheral refuses what comes while it hangs up), over all.
        var answered = 0
        var refused = 0
        /// How each connection's last write failed: refused, or the link gone.
        var endings: [String] = []
    }

    func run() async throws {
        guard connections > 0, let bytes = Self.bytes(hex: value), !bytes.isEmpty else {
            throw ValidationError("--connections takes a positive number and --value non-empty hex")
        }
        let session = try await BlueZSession.connect(logger: options.makeLogger("blepay.loopback.storm"))
        let adapter = try session.adapter(named: options.adapter)
        try await adapter.setPowered(true)
        // The service may be named in the advertisement's service data rather than its UUID list (blepay's
        // customers do so), which a discovery filter on UUIDs does not see: every LE device is looked at.
        let filter = DiscoveryFilter()
        try await adapter.setDiscoveryFilter(filter)
        let service = service.lowercased()
        let serves: @Sendable (Device) -> Bool = { $0.serviceUUIDs.contains(service) || $0.serviceData[service] != nil }
        var report = Report()
        for n in 1...connections {
            let (device, _, _, attempts) = try await connect(adapter, filter, accepting: serves, timeout: options.timeout)
            report.connectAttempts += attempts
            let target = try await device.characteristic(service: service, characteristic: characteristic)
            var (answered, refused) = (0, 0)
            var ending: BlueZError?
            while ending == nil {
                do {
                    try await target.write(bytes, type: .request)
                    answered += 1
                } catch where error.code == .notPermitted && throughRefusals {
                    refused += 1
                } catch {
                    ending = error
                }
                guard answered + refused < Self.writeLimit else {
                    throw LoopbackFailure("connection \(n): not hung up after \(answered + refused) writes")
                }
            }
            report.connections += 1
            report.answered += answered
            report.refused += refused
            report.endings.append(ending.map { "\($0.code)" } ?? "")
            print("storm: connection \(n): \(answered) write(s) answered, \(refused) refused, then \(ending.map { "\($0)" } ?? "")")
            try? await device.disconnect()
            try? await adapter.removeDevice(device)
        }
        try options.write(report)
        session.close()
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
