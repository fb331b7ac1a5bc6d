import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// LE advertisements registered on hci0, as bluetoothd reads them.
@Suite(.timeLimit(.minutes(1))) struct AdvertisementTests {
    @Test func bluetoothdReadsTheDeclaredPropertiesBeforeRegistering() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let handle = try await f.session.adapter(named: "hci0").advertise(
            Advertisement(
                serviceUUIDs: [payService.uppercased()], serviceData: [payService: [1, 0xab]], localName: "blepay"))
        #expect(f.bluetoothd.calls("RegisterAdvertisement") == [
            .init(
                member: "RegisterAdvertisement", path: "/org/bluez/hci0",
                arguments: [.objectPath(handle.path), .stringDictionary([:])])
        ])
        let registration = try #require(f.bluetoothd.advertisements[handle.path])
        #expect(registration.owner == f.session.connection.uniqueName)
        let properties = registration.advertisement
        #expect(properties["Type"] == .string("peripheral"))
        #expect(properties["ServiceUUIDs"] == .strings([payService]))
        #expect(properties["ServiceData"] == .dictionary(key: "s", value: "v", [
            DBusDictEntry(key: .string(payService), value: .variant(.bytes([1, 0xab])))
        ]))
        #expect(properties["LocalName"] == .string("blepay"))
        #expect(properties["Discoverable"] == .boolean(true))
        #expect(properties["Includes"] == .strings([]))
        await handle.stop()
    }

    @Test func aBroadcastWithoutNameLeavesTheNameOut() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let handle = try await f.session.adapter(named: "hci0").advertise(
            Advertisement(kind: .broadcast, manufacturerData: [0xffff: [7]], discoverable: false))
        let properties = try #require(f.bluetoothd.advertisements[handle.path]).advertisement
        #expect(properties["Type"] == .string("broadcast"))
        #expect(properties["LocalName"] == nil)
        #expect(properties["Discoverable"] == .boolean(false))
        #expect(properties["ManufacturerData"] == .dictionary(key: "q", value: "v", [
            DBusDictEntry(key: .uint16(0xffff), value: .variant(.bytes([7])))
        ]))
        await handle.stop()
    }

    @Test func stopUnregistersAndRemovesTheObject() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let handle = try await f.session.adapter(named: "hci0").advertise(Advertisement(serviceUUIDs: [payService]))
        let registration = try #require(f.bluetoothd.advertisements[handle.path])
        await handle.stop()
        #expect(f.bluetoothd.calls("UnregisterAdvertisement") == [
            .init(member: "UnregisterAdvertisement", path: "/org/bluez/hci0", arguments: [.objectPath(handle.path)])
        ])
        #expect(f.bluetoothd.advertisements.isEmpty)
        #expect(await f.bluetoothd.advertisementProperties(of: registration) == nil)
    }
}
