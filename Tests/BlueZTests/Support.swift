import BlueZ
import BlueZTestSupport
import DBusKit
import DBusTestSupport
import Testing
import TestSupport

let payService = "6e2d0001-5b1a-4c8e-9d4a-b1e9a7000001"
let payCharacteristic = "6e2d0002-5b1a-4c8e-9d4a-b1e9a7000001"
let payNotifyCharacteristic = "6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001"
let batteryService = "0000180f-0000-1000-8000-00805f9b34fb"
let deviceInformationService = "0000180a-0000-1000-8000-00805f9b34fb"

let device1Interface = "org.bluez.Device1"
let adapter1Interface = "org.bluez.Adapter1"
let characteristic1Interface = "org.bluez.GattCharacteristic1"
let service1Interface = "org.bluez.GattService1"

/// A private bus with the bluetoothd stand-in on it and a BlueZ session connected to it.
struct BlueZFixture {
    let bus: TestBus
    let bluetoothd: FakeBluetoothd
    let session: BlueZSession

    static func make(
        adapters: [String] = ["hci0", "hci1"], powered: Bool = false,
        prepare: (FakeBluetoothd) async throws -> Void = { _ in }
    ) async throws -> BlueZFixture {
        let bus = try TestBus()
        let bluetoothd = try await FakeBluetoothd(bus: bus, adapters: adapters, powered: powered, prepare: prepare)
        let session = try await BlueZSession.connect(to: .address(bus.address))
        return BlueZFixture(bus: bus, bluetoothd: bluetoothd, session: session)
    }

    func stop() {
        session.close()
        bluetoothd.stop()
        bus.stop()
    }

    /// A device the stand-in added, once the session has mirrored it.
    func device(_ path: DBusObjectPath) async throws -> Device {
        try await mirrored(session, "\(path)") { [session] in session.properties(path, device1Interface) != nil }
        return Device(session: session, path: path)
    }
}

/// Waits until `condition` holds for the session's mirror, checking it after every change.
func mirrored(
    _ session: BlueZSession, _ what: String, within limit: Duration = .seconds(5),
    _ condition: @escaping @Sendable () -> Bool
) async throws {
    let events = session.events()
    if condition() { return }
    try await within(limit, what) {
        for await _ in events where condition() { return }
        throw TimedOut(what: "\(what) (session closed)")
    }
}

/// The `BlueZError` that `operation` throws, or nil if it succeeds.
func bluezError(_ operation: () async throws(BlueZError) -> Void) async -> BlueZError? {
    do {
        try await operation()
        return nil
    } catch {
        return error
    }
}

/// The name of the D-Bus error that `operation` throws, or nil if it succeeds.
func dbusErrorName(_ operation: () async throws -> Void) async -> String? {
    do {
        try await operation()
        return nil
    } catch {
        return (error as? DBusError)?.name ?? "not a D-Bus error reply: \(error)"
    }
}
