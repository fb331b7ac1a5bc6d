import BlueZ
import BlueZTestSupport
import DBusKit
import Synchronization
import Testing
import TestSupport

/// A GATT application served on hci0, as bluetoothd registers and uses it for a central.
@Suite(.timeLimit(.minutes(1))) struct GattServerTests {
    static let levelCharacteristic = "00002a19-0000-1000-8000-00805f9b34fb"
    static let central: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_01_00_01"

    /// The options of a request from `central`.
    static func options(mtu: UInt16 = 23, offset: UInt16 = 0) -> DBusValue {
        FakeBluetoothd.requestOptions(device: central, mtu: mtu, offset: offset)
    }

    /// What the handlers were called with.
    final class Requests: Sendable {
        let writes = Mutex<[([UInt8], GattRequest)]>([])
        let reads = Mutex<[GattRequest]>([])
    }

    /// A write-only request characteristic, a read/notify response characteristic, and a battery level read
    /// by its handler.
    static func application(_ requests: Requests) -> GattApplication {
        GattApplication(services: [
            GattService(uuid: payService.uppercased(), characteristics: [
                GattCharacteristic(uuid: payCharacteristic.uppercased(), flags: ["write"]) {
                    value, request throws(BlueZError) in
                    if value == [0xff] { throw BlueZError(.notPermitted, "refused") }
                    requests.writes.withLock { $0.append((value, request)) }
                },
                GattCharacteristic(uuid: payNotifyCharacteristic, flags: ["read", "notify"], value: [10, 11, 12, 13]),
            ]),
            GattService(uuid: batteryService, characteristics: [
                GattCharacteristic(uuid: levelCharacteristic, flags: ["read"], onRead: { request throws(BlueZError) in
                    requests.reads.withLock { $0.append(request) }
                    return [100, 99, 98]
                })
            ]),
        ])
    }

    /// A fixture with the application served, and the application as bluetoothd registered it.
    struct Served {
        let f: BlueZFixture
        let handle: GattApplicationHandle
        let registration: FakeBluetoothd.Registration
        let requests: Requests

        /// The path of the characteristic with `uuid`, as bluetoothd read it.
        func path(of uuid: String) throws -> DBusObjectPath {
            try #require(registration.characteristic(uuid))
        }

        func call(_ uuid: String, _ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
            try await f.bluetoothd.callCharacteristic(path(of: uuid), of: registration, member, arguments)
        }
    }

    func served() async throws -> Served {
        let f = try await BlueZFixture.make()
        let requests = Requests()
        let handle = try await f.session.adapter(named: "hci0").serve(Self.application(requests))
        let registration = try #require(f.bluetoothd.applications.values.first)
        return Served(f: f, handle: handle, registration: registration, requests: requests)
    }

    @Test func bluetoothdReadsTheWholeApplicationBeforeRegistering() async throws {
        let s = try await served()
        defer { s.f.stop() }
        // The stand-in stores the tree it read back from us before it replied: no deadlock, nothing missing.
        let root = s.registration.path
        #expect(s.f.bluetoothd.calls("RegisterApplication") == [
            .init(member: "RegisterApplication", path: "/org/bluez/hci0", arguments: [.objectPath(root), .stringDictionary([:])])
        ])
        #expect(s.registration.owner == s.f.session.connection.uniqueName)
        let objects = s.registration.objects
        #expect(objects.keys.allSatisfy { $0.isDescendant(of: root) })
        let services = objects.compactMapValues { $0[service1Interface] }
        #expect(Set(services.values.map { $0["UUID"] }) == [.string(payService), .string(batteryService)])
        #expect(services.values.allSatisfy { $0["Primary"] == .boolean(true) })

        let characteristics = objects.compactMapValues { $0[characteristic1Interface] }
        let byUUID = Dictionary(uniqueKeysWithValues: characteristics.map { ($0.value["UUID"]!, $0) })
        #expect(byUUID.keys.count == 3)
        for (uuid, flags, service) in [
            (payCharacteristic, ["write"], payService), (payNotifyCharacteristic, ["read", "notify"], payService),
            (Self.levelCharacteristic, ["read"], batteryService),
        ] {
            let (path, properties) = try #require(byUUID[.string(uuid)])
            #expect(properties["Flags"] == .strings(flags))
            let owner = try #require(try properties["Service"]?.decode(DBusObjectPath.self))
            #expect(path.isDescendant(of: owner))
            #expect(services[owner]?["UUID"] == .string(service))
        }
    }

    @Test func writesReachTheHandlerWithTheCentralAndItsMTU() async throws {
        let s = try await served()
        defer { s.f.stop() }
        let options = Self.options(mtu: 247)
        let reply = try await s.call(payCharacteristic, "WriteValue", [.bytes([1, 2, 3]), options])
        #expect(reply.arguments.isEmpty)  // anything else is ATT "Request Not Supported"
        let writes = s.requests.writes.withLock { $0 }
        #expect(writes.map(\.0) == [[1, 2, 3]])
        #expect(writes.first?.1.device == Self.central)
        #expect(writes.first?.1.mtu == 247)
    }

    @Test func handlerErrorsReachBluetoothdAsBluezErrors() async throws {
        let s = try await served()
        defer { s.f.stop() }
        let options = Self.options(mtu: 247)
        do {
            _ = try await s.call(payCharacteristic, "WriteValue", [.bytes([0xff]), options])
            Issue.record("a refused write succeeded")
        } catch let error as DBusError {
            #expect(error.name == "org.bluez.Error.NotPermitted")
            #expect(error.message == "refused")
        }
        let notWritable = await dbusErrorName {
            _ = try await s.call(payNotifyCharacteristic, "WriteValue", [.bytes([1]), options])
        }
        #expect(notWritable == "org.bluez.Error.NotPermitted")
        #expect(s.requests.writes.withLock { $0.isEmpty })
    }

    @Test func readsStartAtTheOffset() async throws {
        let s = try await served()
        defer { s.f.stop() }
        func read(_ uuid: String, offset: UInt16) async throws -> [DBusValue] {
            try await s.call(uuid, "ReadValue", [Self.options(offset: offset)]).arguments
        }
        #expect(try await read(payNotifyCharacteristic, offset: 0) == [.bytes([10, 11, 12, 13])])
        #expect(try await read(payNotifyCharacteristic, offset: 2) == [.bytes([12, 13])])
        #expect(try await read(payNotifyCharacteristic, offset: 4) == [.bytes([])])
        #expect(try await read(Self.levelCharacteristic, offset: 1) == [.bytes([99, 98])])
        #expect(s.requests.reads.withLock { $0.map(\.offset) } == [1])
        #expect(s.requests.reads.withLock { $0.first?.device } == Self.central)
        let pastTheEnd = await dbusErrorName {
            _ = try await s.call(payNotifyCharacteristic, "ReadValue", [Self.options(offset: 5)])
        }
        #expect(pastTheEnd == "org.bluez.Error.InvalidOffset")
    }

    @Test func notificationsAreValueChangesBluetoothdSees() async throws {
        let s = try await served()
        defer { s.f.stop() }
        let path = try s.path(of: payNotifyCharacteristic)
        let changes = try await s.f.bluetoothd.propertyChanges(of: path, in: s.registration)
        #expect(!s.handle.isNotifying(payNotifyCharacteristic))
        _ = try await s.call(payNotifyCharacteristic, "StartNotify")
        #expect(s.handle.isNotifying(payNotifyCharacteristic.uppercased()))
        try await s.handle.notify(payNotifyCharacteristic.uppercased(), [42])
        try await s.handle.notify(payNotifyCharacteristic, [42])
        try await s.handle.notify(payNotifyCharacteristic, [43, 44])
        _ = try await s.call(payNotifyCharacteristic, "StopNotify")

        let seen = try await first(5, of: changes).map { $0.arguments }
        let changed = { (name: String, value: DBusValue) -> [DBusValue] in
            [.string(characteristic1Interface), .stringDictionary([name: value]), .strings([])]
        }
        #expect(seen == [
            changed("Notifying", .boolean(true)), changed("Value", .bytes([42])), changed("Value", .bytes([42])),
            changed("Value", .bytes([43, 44])), changed("Notifying", .boolean(false)),
        ])
        #expect(!s.handle.isNotifying(payNotifyCharacteristic))
        // A read returns what was notified last.
        let read = try await s.call(payNotifyCharacteristic, "ReadValue", [Self.options()])
        #expect(read.arguments == [.bytes([43, 44])])
    }

    @Test func stopUnregistersAndRemovesTheObjects() async throws {
        let s = try await served()
        defer { s.f.stop() }
        await s.handle.stop()
        #expect(s.f.bluetoothd.calls("UnregisterApplication") == [
            .init(
                member: "UnregisterApplication", path: "/org/bluez/hci0", arguments: [.objectPath(s.registration.path)])
        ])
        #expect(s.f.bluetoothd.applications.isEmpty)
        let write = await dbusErrorName {
            _ = try await s.call(payCharacteristic, "WriteValue", [.bytes([1]), Self.options()])
        }
        #expect(write == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(await s.f.bluetoothd.managedObjects(of: s.registration) == nil)
    }
}
