import BlueZ
import DBusKit
import Synchronization
import Testing

/// The peripheral side against the stand-in: GATT applications, advertisements, re-registration.
@Suite(.timeLimit(.minutes(1))) struct PeripheralTests {
    final class Writes: Sendable {
        let values = Mutex<[([UInt8], GattRequest)]>([])
    }

    func application(_ writes: Writes) -> GattApplication {
        GattApplication(services: [
            GattService(uuid: payService.uppercased(), characteristics: [
                GattCharacteristic(uuid: payCharacteristic, flags: ["write"]) { (value, request) throws(BlueZError) in
                    if value == [0xff] { throw BlueZError(.notPermitted, "refused") }
                    writes.values.withLock { $0.append((value, request)) }
                },
                GattCharacteristic(uuid: "6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001", flags: ["read", "notify"], value: [10, 11, 12, 13]),
            ])
        ])
    }

    @Test func servesAnApplicationThatBluetoothdCanUse() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let writes = Writes()
        let adapter = try f.session.adapter(named: "hci0")
        let app = try await adapter.serve(application(writes))

        // bluetoothd read the tree back from us before RegisterApplication returned.
        let tree = f.bluetoothd.registeredApplication.withLock { $0 }
        let services = tree.filter { $0.value["org.bluez.GattService1"] != nil }
        let characteristics = tree.compactMap { $0.value["org.bluez.GattCharacteristic1"] }
        #expect(services.count == 1)
        #expect(services.first?.value["org.bluez.GattService1"]?["UUID"]?.unwrapped == .string(payService))
        #expect(Set(characteristics.compactMap { try? $0["UUID"]?.decode(String.self) }) == [payCharacteristic, "6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001"])
        #expect(characteristics.allSatisfy { $0["Service"]?.unwrapped == .objectPath(services.first!.key) })
        let writable = tree.first { $0.value["org.bluez.GattCharacteristic1"]?["UUID"]?.unwrapped == .string(payCharacteristic) }!
        let notifying = tree.first { $0.key != writable.key && $0.value["org.bluez.GattCharacteristic1"] != nil }!
        #expect(writable.value["org.bluez.GattCharacteristic1"]?["Flags"]?.unwrapped == .strings(["write"]))

        // bluetoothd delivers a write with the central's device and MTU.
        let client = f.bluetoothd.connection
        let owner = f.session.connection.uniqueName
        let options = DBusValue.stringDictionary([
            "device": .objectPath("/org/bluez/hci0/dev_00_AA_01_01_00_01"), "mtu": .uint16(247), "link": .string("LE"),
        ])
        func call(_ path: DBusObjectPath, _ member: String, _ args: [DBusValue]) async throws(DBusError) -> DBusMessage {
            try await client.call(destination: owner, path: path, interface: "org.bluez.GattCharacteristic1", member: member, arguments: args)
        }
        _ = try await call(writable.key, "WriteValue", [.bytes([1, 2, 3]), options])
        let write = writes.values.withLock { $0.first }
        #expect(write?.0 == [1, 2, 3])
        #expect(write?.1.device == "/org/bluez/hci0/dev_00_AA_01_01_00_01")
        #expect(write?.1.mtu == 247)
        do {
            _ = try await call(writable.key, "WriteValue", [.bytes([0xff]), options])
            Issue.record("a refused write succeeded")
        } catch {
            #expect(error.name == "org.bluez.Error.NotPermitted")
        }
        #expect(try await call(notifying.key, "ReadValue", [.stringDictionary(["offset": .uint16(2)])]).arguments == [.bytes([12, 13])])

        // Notifications: StartNotify, then each value set is a PropertiesChanged on the characteristic.
        let changes = try await client.signals(matching: DBusMatchRule(sender: owner, member: "PropertiesChanged", path: notifying.key))
        _ = try await call(notifying.key, "StartNotify", [])
        try await eventually("notifying") { app.isNotifying("6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001") }
        try await app.notify("6e2d0003-5b1a-4c8e-9d4a-b1e9a7000001", [42])
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.arguments[1] == .stringDictionary(["Notifying": .boolean(true)]))
        #expect(await iterator.next()?.arguments[1] == .stringDictionary(["Value": .bytes([42])]))

        await app.stop()
        #expect(f.bluetoothd.recorded.contains { $0.hasPrefix("UnregisterApplication /org/bluez/hci0") })
        await #expect(throws: DBusError.self) { _ = try await call(writable.key, "WriteValue", [.bytes([1]), options]) }
    }

    @Test func advertisesWithTheDeclaredProperties() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        let advertisement = try await adapter.advertise(
            Advertisement(serviceUUIDs: [payService], serviceData: [payService: [1, 0xab]], localName: "blepay"))
        let properties = f.bluetoothd.registeredAdvertisement.withLock { $0 }
        #expect(properties["Type"] == .string("peripheral"))
        #expect(properties["ServiceUUIDs"] == .strings([payService]))
        #expect(properties["ServiceData"] == .dictionary(key: "s", value: "v", [DBusDictEntry(key: .string(payService), value: .variant(.bytes([1, 0xab])))]))
        #expect(properties["LocalName"] == .string("blepay"))
        #expect(properties["Discoverable"] == .boolean(true))
        await advertisement.stop()
        #expect(f.bluetoothd.recorded.contains("UnregisterAdvertisement /org/bluez/hci0 \([DBusValue.objectPath(advertisement.path)])"))
    }

    @Test func registersAgainAfterBluetoothdRestarts() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let adapter = try f.session.adapter(named: "hci0")
        try await adapter.setPowered(true)
        let app = try await adapter.serve(application(Writes()))
        let advertisement = try await adapter.advertise(Advertisement(serviceUUIDs: [payService]))
        let events = f.session.events()

        f.bluetoothd.stop()
        let restarted = try await FakeBluetoothd(bus: f.bus)
        defer { restarted.stop() }
        try await restarted.set("/org/bluez/hci0", "org.bluez.Adapter1", "Powered", .boolean(true))  // AutoEnable
        var iterator = events.makeAsyncIterator()
        var seen: [String] = []
        while let event = await iterator.next() {
            if case .vanished = event { seen.append("vanished") }
            if case .restarted = event { seen.append("restarted"); break }
        }
        #expect(seen == ["vanished", "restarted"])
        try await eventually("application and advertisement registered again") {
            let calls = restarted.recorded
            return calls.contains { $0.hasPrefix("RegisterApplication") } && calls.contains { $0.hasPrefix("RegisterAdvertisement") }
        }
        #expect(restarted.registeredApplication.withLock { $0.count } == 3)
        await advertisement.stop()
        await app.stop()
    }
}
