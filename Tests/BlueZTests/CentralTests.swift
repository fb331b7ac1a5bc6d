import BlueZ
import DBusKit
import Testing

let payService = "6e2d0001-5b1a-4c8e-9d4a-b1e9a7000001"
let payCharacteristic = "6e2d0002-5b1a-4c8e-9d4a-b1e9a7000001"

/// The central side against the stand-in: mirror, adapters, discovery, connection, remote GATT.
@Suite(.timeLimit(.minutes(1))) struct CentralTests {
    @Test func mirrorFollowsBluetoothd() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        #expect(f.session.adapters().map(\.name) == ["hci0", "hci1"])
        #expect(try f.session.adapter(named: "hci1").address == "00:AA:01:01:00:00")
        #expect(throws: BlueZError.self) { try f.session.adapter(named: "hci9") }

        let events = f.session.events()
        let device = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66", uuids: [payService])
        try await f.bluetoothd.set(device, "org.bluez.Device1", "Connected", .boolean(true))
        await f.bluetoothd.remove(device)
        var iterator = events.makeAsyncIterator()
        guard case .added(device, let added)? = await iterator.next() else { Issue.record("no InterfacesAdded"); return }
        #expect(added["org.bluez.Device1"]?["Address"]?.unwrapped == .string("11:22:33:44:55:66"))
        guard case .changed(device, "org.bluez.Device1", let values)? = await iterator.next() else {
            Issue.record("no PropertiesChanged")
            return
        }
        #expect(values == ["Connected": .boolean(true)])
        guard case .removed(device, let interfaces)? = await iterator.next() else { Issue.record("no InterfacesRemoved"); return }
        #expect(interfaces == ["org.bluez.Device1"])
        #expect(f.session.properties(device, "org.bluez.Device1") == nil)
    }

    @Test func poweringAndDiscoveryFilter() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        #expect(!adapter.isPowered)
        try await adapter.setPowered(true)
        #expect(adapter.isPowered)
        try await adapter.setDiscoveryFilter(DiscoveryFilter(serviceUUIDs: [payService.uppercased()]))
        try await adapter.startDiscovery()
        let expectedFilter = DBusValue.stringDictionary([
            "UUIDs": .strings([payService]), "Transport": .string("le"), "DuplicateData": .boolean(false),
        ])
        #expect(f.bluetoothd.recorded == ["SetDiscoveryFilter /org/bluez/hci0 \([expectedFilter])", "StartDiscovery /org/bluez/hci0 []"])
    }

    @Test func discoveryYieldsMatchingDevicesOfThisAdapterOnce() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        let adapter = try f.session.adapter(named: "hci0")
        try await eventually("first device mirrored") { adapter.device(address: "00:00:00:00:00:01") != nil }
        let stream = adapter.discoveredDevices(matching: DiscoveryFilter(serviceUUIDs: [payService]))
        try await f.bluetoothd.addDevice("hci1", "00:00:00:00:00:02", uuids: [payService])  // other adapter
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:03", uuids: ["0000180f-0000-1000-8000-00805f9b34fb"])
        let later = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:04", uuids: [payService])
        try await f.bluetoothd.set(later, "org.bluez.Device1", "Connected", .boolean(true))  // a change: not yielded again
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:05", uuids: [payService])
        var found: [String] = []
        for await device in stream {
            found.append(device.address ?? "?")
            if found.count == 3 { break }
        }
        #expect(found == ["00:00:00:00:00:01", "00:00:00:00:00:04", "00:00:00:00:00:05"])
    }

    @Test func connectRetriesTransientFailures() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        f.bluetoothd.connectOutcome.withLock {
            $0 = { attempt in
                attempt <= 2 ? DBusError.reply(name: "org.bluez.Error.Failed", "le-connection-abort-by-local") : nil
            }
        }
        let path = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        let adapter = try f.session.adapter(named: "hci0")
        try await eventually("device mirrored") { adapter.device(address: "00:00:00:00:00:01") != nil }
        let report = try await adapter.device(address: "00:00:00:00:00:01")!.connect(attempts: 4)
        #expect(report.attempts == 3)
        #expect(report.connected <= report.servicesResolved)
        let calls = f.bluetoothd.recorded.filter { $0.hasPrefix("Connect") || $0.hasPrefix("Disconnect") }
        #expect(calls == ["Connect", "Disconnect", "Connect", "Disconnect", "Connect"].map { "\($0) \(path) []" })
    }

    @Test func permanentConnectFailuresAreNotRetried() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        f.bluetoothd.connectOutcome.withLock { $0 = { _ in DBusError.reply(name: "org.bluez.Error.DoesNotExist", "gone") } }
        try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        let adapter = try f.session.adapter(named: "hci0")
        try await eventually("device mirrored") { adapter.device(address: "00:00:00:00:00:01") != nil }
        await #expect(throws: BlueZError(.doesNotExist, "gone", dbusName: "org.bluez.Error.DoesNotExist")) {
            _ = try await adapter.device(address: "00:00:00:00:00:01")!.connect(attempts: 4)
        }
        #expect(f.bluetoothd.recorded.filter { $0.hasPrefix("Connect") }.count == 1)
    }

    @Test func characteristicsAreFoundEvenWhenExportedLate() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let path = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        try await f.bluetoothd.addCharacteristic(device: path, service: "0000180a-0000-1000-8000-00805f9b34fb", characteristic: payCharacteristic)
        try await eventually("device mirrored") { f.session.properties(path, "org.bluez.Device1") != nil }
        let device = Device(session: f.session, path: path)
        // bluez/bluez#1489: the objects can appear after ServicesResolved.
        Task {
            try await Task.sleep(for: .milliseconds(200))
            try await f.bluetoothd.addCharacteristic(device: path, service: payService, characteristic: payCharacteristic, index: 1)
        }
        let characteristic = try await device.characteristic(service: payService.uppercased(), characteristic: payCharacteristic)
        #expect(characteristic.path.rawValue == "\(path.rawValue)/service1/char0")
        #expect(characteristic.mtu == 517)
        await #expect(throws: BlueZError.self) {
            _ = try await device.characteristic(service: payService, characteristic: "00000000-0000-0000-0000-000000000000", timeout: .milliseconds(200))
        }
    }

    @Test func remoteCharacteristicReadWriteAndNotifications() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let device = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
        let path = try await f.bluetoothd.addCharacteristic(device: device, service: payService, characteristic: payCharacteristic, busyWrites: 2)
        try await eventually("characteristic mirrored") { f.session.properties(path, "org.bluez.GattCharacteristic1") != nil }
        let characteristic = RemoteCharacteristic(session: f.session, path: path)

        try await characteristic.write([9, 8, 7], type: .request)  // answered InProgress twice first
        #expect(f.bluetoothd.recorded.contains("WriteValue \([DBusValue.bytes([9, 8, 7]), .stringDictionary(["type": .string("request")])])"))
        #expect(try await characteristic.read() == [1, 2, 3])

        let notifications = try await characteristic.notifications()
        #expect(f.bluetoothd.recorded.contains("StartNotify"))
        for value: [UInt8] in [[1], [1], [2, 3]] {
            try await f.bluetoothd.set(path, "org.bluez.GattCharacteristic1", "Value", .bytes(value))
        }
        var received: [[UInt8]] = []
        for await value in notifications {
            received.append(value)
            if received.count == 3 { break }
        }
        #expect(received == [[1], [1], [2, 3]])
    }
}
