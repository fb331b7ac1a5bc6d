import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// Adapters: power, discovery and the devices and connections seen under one adapter (hci1 is the other).
@Suite(.timeLimit(.minutes(1))) struct AdapterTests {
    @Test func setPoweredSetsThePropertyAndWaitsForTheChange() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        #expect(!adapter.isPowered)
        try await adapter.setPowered(true)
        #expect(adapter.isPowered)
        try await adapter.setPowered(false)
        #expect(!adapter.isPowered)
        #expect(f.bluetoothd.calls("Set Powered") == [
            .init(member: "Set Powered", path: adapter.path, arguments: [.boolean(true)]),
            .init(member: "Set Powered", path: adapter.path, arguments: [.boolean(false)]),
        ])
        #expect(try !f.session.adapter(named: "hci1").isPowered)
    }

    @Test func discoveryFilterIsSentAsBluetoothdReadsIt() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let filter = DiscoveryFilter(serviceUUIDs: [payService.uppercased()], duplicateData: true)
        try await adapter.setDiscoveryFilter(filter)
        try await adapter.setDiscoveryFilter(DiscoveryFilter())
        #expect(f.bluetoothd.calls("SetDiscoveryFilter").map(\.arguments) == [
            [.stringDictionary([
                "UUIDs": .strings([payService]), "Transport": .string("le"), "DuplicateData": .boolean(true),
            ])],
            [.stringDictionary(["Transport": .string("le"), "DuplicateData": .boolean(false)])],
        ])
    }

    @Test func discoveryStartsAndStops() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        #expect(await bluezError { () throws(BlueZError) in try await adapter.startDiscovery() }?.code == .notReady)
        try await adapter.stopDiscovery()  // NotReady: nothing to stop
        try await adapter.setPowered(true)
        try await adapter.startDiscovery()
        try await mirrored(f.session, "discovering") {
            adapter.session.properties(adapter.path, adapter1Interface)?["Discovering"] == .boolean(true)
        }
        try await adapter.stopDiscovery()
        try await adapter.stopDiscovery()  // "No discovery started"
        #expect(f.bluetoothd.calls("StopDiscovery").count == 3)
    }

    /// BlueZ answers InProgress to a second start, and also when the controller failed to start scanning: only
    /// the first counts as discovering.
    @Test func inProgressIsDiscoveringOnlyIfTheAdapterSaysSo() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        try await adapter.setPowered(true)
        f.bluetoothd.answerInProgress(adapter.path, "StartDiscovery", times: 1)
        let refused = await bluezError { () throws(BlueZError) in
            try await adapter.startDiscovery(timeout: .milliseconds(300))
        }
        #expect(refused?.code == .failed && !adapter.isDiscovering)

        try await adapter.startDiscovery()
        try await adapter.startDiscovery()  // InProgress from bluetoothd: already discovering
        #expect(adapter.isDiscovering)
        #expect(f.bluetoothd.calls("StartDiscovery").count == 3)
    }

    @Test func discoveredDevicesAreThoseOfThisAdapterThatMatchEachOnce() async throws {
        let f = try await BlueZFixture.make { bluetoothd in
            try await bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService.uppercased()])
        }
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let stream = adapter.discoveredDevices(matching: DiscoveryFilter(serviceUUIDs: [payService]))

        try await f.bluetoothd.addDevice("hci1", "00:00:00:00:00:02", uuids: [payService])
        let other = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:03", uuids: [batteryService])
        let later = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:04", uuids: [batteryService, payService])
        try await f.bluetoothd.set(later, device1Interface, "Connected", .boolean(true))
        try await f.bluetoothd.set(later, device1Interface, "UUIDs", .strings([payService]))
        try await f.bluetoothd.set(other, device1Interface, "UUIDs", .strings([batteryService, payService]))
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:05", uuids: [payService])

        let found = try await collect(stream) { $0.last?.address == "00:00:00:00:00:05" }
        // Each matching device of this adapter once. Their order depends on when the stream took its first look:
        // devices that already match then are yielded from that look, the rest as they change.
        #expect(found.count == 4)
        #expect(Set(found.map(\.address)) == Set(["01", "03", "04", "05"].map { "00:00:00:00:00:\($0)" }))
        #expect(found.allSatisfy { $0.path.isDescendant(of: adapter.path) })
    }

    @Test func unfilteredDiscoveryYieldsDevicesOnly() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let stream = adapter.discoveredDevices()
        let device = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01")
        try await f.bluetoothd.addDevice("hci1", "00:00:00:00:00:02")
        // A connected device's GATT objects live below it; they are not devices.
        try await f.bluetoothd.addServices(
            [.init(uuid: payService, characteristics: [.init(uuid: payCharacteristic)])], to: device)
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:03")

        let found = try await collect(stream) { $0.count == 2 || $0.last?.address == "00:00:00:00:00:03" }
        #expect(found.map(\.path.rawValue) == ["01", "03"].map { "/org/bluez/hci0/dev_00_00_00_00_00_\($0)" })
    }

    @Test func removedDeviceIsForgottenAndFoundAgainWhenItReappears() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let path = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        try await f.bluetoothd.addServices(
            [.init(uuid: payService, characteristics: [.init(uuid: payCharacteristic)])], to: path)
        let stream = adapter.discoveredDevices(matching: DiscoveryFilter(serviceUUIDs: [payService]))
        let device = try #require(try await collect(stream) { $0.count == 1 }.first)

        try await adapter.removeDevice(device)
        try await mirrored(f.session, "device and its services gone") {
            f.session.paths(with: device1Interface, under: adapter.path).isEmpty
                && f.session.paths(with: "org.bluez.GattService1", under: adapter.path).isEmpty
        }
        let error = await bluezError { () throws(BlueZError) in try await adapter.removeDevice(device) }
        #expect(error?.code == .doesNotExist)

        let again = adapter.discoveredDevices(matching: DiscoveryFilter(serviceUUIDs: [payService]))
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        #expect(try await collect(again) { $0.count == 1 }.map(\.path) == [device.path])
    }

    @Test func connectionEventsAreThoseOfThisAdapter() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let deviceA = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01")
        let elsewhere = try await f.bluetoothd.addDevice("hci1", "00:00:00:00:00:02")
        let events = adapter.connectionEvents()

        try await f.bluetoothd.set(elsewhere, device1Interface, "Connected", .boolean(true))
        try await f.bluetoothd.set(deviceA, device1Interface, "Connected", .boolean(true))
        try await f.bluetoothd.set(deviceA, device1Interface, "ServicesResolved", .boolean(true))
        let deviceB = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:03", connected: true)
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:04")
        try await f.bluetoothd.set(elsewhere, device1Interface, "Connected", .boolean(false))
        try await f.bluetoothd.set(deviceA, device1Interface, "Connected", .boolean(false))
        try await f.bluetoothd.set(deviceB, device1Interface, "Connected", .boolean(false))

        let seen = try await collect(events) { $0.count == 4 }.map { "\($0.device.path) \($0.connected)" }
        #expect(seen == ["\(deviceA) true", "\(deviceB) true", "\(deviceA) false", "\(deviceB) false"])
    }
}
