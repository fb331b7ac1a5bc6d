import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// What the peripheral registered comes back by itself when bluetoothd restarts.
@Suite(.timeLimit(.minutes(1))) struct ReregistrationTests {
    @Test func applicationAndAdvertisementAreRegisteredAgainAfterBluetoothdRestarts() async throws {
        let f = try await BlueZFixture.make(powered: true)
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let requests = GattServerTests.Requests()
        let app = try await adapter.serve(GattServerTests.application(requests))
        let advertisement = try await adapter.advertise(Advertisement(serviceUUIDs: [payService], localName: "blepay"))
        let application = try #require(f.bluetoothd.applications.values.first)
        let advertised = try #require(f.bluetoothd.advertisements[advertisement.path])
        let events = f.session.events()

        f.bluetoothd.stop()
        // Adapters come back unpowered; registering waits until AutoEnable has powered hci0.
        let restarted = try await FakeBluetoothd(bus: f.bus)
        defer { restarted.stop() }
        let seen = try await collect(events) { events in
            if case .restarted? = events.last { return true }
            return false
        }
        #expect(seen.count == 2)
        if case .vanished? = seen.first {} else { Issue.record("expected vanished first, got \(seen)") }
        #expect(restarted.applications.isEmpty && restarted.advertisements.isEmpty)

        try await restarted.power("hci0", true)
        try await eventually("application and advertisement registered again") {
            restarted.applications.count == 1 && restarted.advertisements.count == 1
        }
        let again = try #require(restarted.applications[application.path])
        #expect(again.objects == application.objects)
        #expect(restarted.advertisements[advertisement.path]?.advertisement == advertised.advertisement)

        // bluetoothd can use the application again.
        let write = try #require(again.characteristic(payCharacteristic))
        _ = try await restarted.callCharacteristic(write, of: again, "WriteValue", [.bytes([5]), GattServerTests.options()])
        #expect(requests.writes.withLock { $0.map(\.0) } == [[5]])

        await advertisement.stop()
        await app.stop()
        #expect(restarted.calls("UnregisterAdvertisement").map(\.arguments) == [[.objectPath(advertisement.path)]])
        #expect(restarted.calls("UnregisterApplication").map(\.arguments) == [[.objectPath(application.path)]])
        #expect(restarted.applications.isEmpty && restarted.advertisements.isEmpty)
    }
}
