import BlepayControl
import DBusKit
import Foundation
import Testing
import TestSupport

/// `examples/python/customer.py`, the control API from Python with a maintained D-Bus library (jeepney, from
/// Debian's python3-jeepney, which `make deps` installs), run against both daemons' control objects on a private bus.
@Suite(.timeLimit(.minutes(1)))
struct PythonExampleTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../examples/python/customer.py").standardized.path

    @Test func thePythonCustomerPaysWhatIsWithinItsLimitAndDeclinesTheRest() async throws {
        let fixture = try await ControlFixture()
        defer { fixture.stop() }
        let businessEvents = try await fixture.events(.business)
        let python = BuiltProduct(path: "/usr/bin/python3")
        let (process, pipe) = try python.start([
            Self.example, "--bus", fixture.bus.address, "--instrument", "card-1", "--limit", "3000", "--payments", "2",
        ])
        defer { if process.isRunning { process.terminate() } }
        try await waitUntilReceiving(fixture)

        let small = try await fixture.call(.business, "SendPaymentRequest", [.uint64(2550), .string("EUR"), .string("")])
            .arguments[0].decode(String.self)
        #expect(try await businessEvents.next(.finished).paymentID == small)
        let large = try await fixture.call(.business, "SendPaymentRequest", [.uint64(9900), .string("EUR"), .string("")])
            .arguments[0].decode(String.self)
        #expect(try await businessEvents.next(.declined).paymentID == large)

        let status = try await exitStatus(of: process, within: .seconds(20))
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0, "\(output)")
        #expect(output.contains("finishedPayment \(small)") && output.contains("cancelled \(large)"), "\(output)")
        #expect(output.hasSuffix("stopped receiving\n"))
    }

    /// Until the example's StartReceiving took effect.
    private func waitUntilReceiving(_ fixture: ControlFixture) async throws {
        for _ in 0..<200 {
            let reply = try await fixture.client.call(
                destination: ControlAPI.customerBusName, path: ControlAPI.customerPath,
                interface: "org.freedesktop.DBus.Properties", member: "Get",
                arguments: [.string(ControlAPI.customerInterface), .string("Receiving")])
            if reply.arguments.first?.unwrapped == .boolean(true) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TimedOut(what: "the Python customer to start receiving")
    }
}
