import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// Connecting to a device (with 5.66's transient failures) and finding its characteristics.
@Suite(.timeLimit(.minutes(1))) struct DeviceTests {
    static let services: [FakeBluetoothd.RemoteService] = [
        // The same characteristic UUID in another service first.
        .init(uuid: deviceInformationService, characteristics: [
            .init(uuid: payCharacteristic), .init(uuid: "00002a29-0000-1000-8000-00805f9b34fb"),
        ]),
        .init(uuid: payService, characteristics: [.init(uuid: payNotifyCharacteristic), .init(uuid: payCharacteristic)]),
        .init(uuid: batteryService, characteristics: [.init(uuid: "00002a19-0000-1000-8000-00805f9b34fb")]),
    ]

    static let abort = DBusError.reply(name: "org.bluez.Error.Failed", "le-connection-abort-by-local")

    /// A fixture with one device on hci0 whose `Connect` does what `outcome` says, by attempt.
    func connectable(
        services: [FakeBluetoothd.RemoteService] = services,
        _ outcome: @escaping @Sendable (Int) -> FakeBluetoothd.ConnectOutcome = { _ in .connect }
    ) async throws -> (BlueZFixture, Device) {
        let f = try await BlueZFixture.make()
        f.bluetoothd.connectOutcome.withLock { $0 = outcome }
        let path = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService], services: services)
        return (f, try await f.device(path))
    }

    /// Device1 and discovery calls as bluetoothd received them, e.g. `Connect /org/bluez/hci0/dev_…`.
    func connectionCalls(_ f: BlueZFixture) -> [String] {
        f.bluetoothd.calls.filter { ["StopDiscovery", "Connect", "Disconnect"].contains($0.member) }
            .map { "\($0.member) \($0.path)" }
    }

    @Test func connectRetriesAbortedConnectionsUntilServicesAreResolved() async throws {
        let (f, device) = try await connectable { $0 <= 2 ? .fail(Self.abort) : .connect }
        defer { f.stop() }
        let report = try await device.connect(attempts: 4)
        #expect(report.attempts == 3)
        #expect(report.connected <= report.servicesResolved)
        #expect(device.isConnected && device.servicesResolved)
        let (connect, disconnect) = ("Connect \(device.path)", "Disconnect \(device.path)")
        #expect(connectionCalls(f) == ["StopDiscovery /org/bluez/hci0", connect, disconnect, connect, disconnect, connect])
    }

    @Test func aLinkLostDuringServiceDiscoveryIsRetried() async throws {
        let (f, device) = try await connectable { $0 == 1 ? .dropDuringDiscovery : .connect }
        defer { f.stop() }
        let report = try await device.connect(attempts: 4)
        #expect(report.attempts == 2)
        #expect(device.servicesResolved)
        #expect(Array(connectionCalls(f).dropFirst()) == ["Connect", "Disconnect", "Connect"].map { "\($0) \(device.path)" })
    }

    @Test func aPermanentFailureIsNotRetried() async throws {
        let (f, device) = try await connectable { _ in .fail(.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")) }
        defer { f.stop() }
        let error = await bluezError { () throws(BlueZError) in _ = try await device.connect(attempts: 4) }
        #expect(error == BlueZError(.doesNotExist, "Does Not Exist", dbusName: "org.bluez.Error.DoesNotExist"))
        #expect(Array(connectionCalls(f).dropFirst()) == ["Connect \(device.path)"])
    }

    @Test func theLastTransientFailureIsThrownWhenAttemptsRunOut() async throws {
        let (f, device) = try await connectable { _ in .fail(Self.abort) }
        defer { f.stop() }
        let error = await bluezError { () throws(BlueZError) in _ = try await device.connect(attempts: 2) }
        #expect(error == BlueZError(.failed, "le-connection-abort-by-local", dbusName: "org.bluez.Error.Failed"))
        #expect(f.bluetoothd.calls("Connect").count == 2)
    }

    @Test func characteristicIsFoundInItsOwnService() async throws {
        let (f, device) = try await connectable()
        defer { f.stop() }
        _ = try await device.connect()
        let characteristic = try await device.characteristic(
            service: payService.uppercased(), characteristic: payCharacteristic.uppercased())
        let properties = f.session.properties(characteristic.path, characteristic1Interface)
        let service = try properties?["Service"]?.decode(DBusObjectPath.self)
        #expect(characteristic.uuid == payCharacteristic)
        #expect(service.flatMap { f.session.properties($0, service1Interface)?["UUID"] } == .string(payService))
        #expect(characteristic.path.isDescendant(of: device.path))
        #expect(characteristic.mtu == 517)
    }

    @Test func characteristicsCachedBeforeTheSessionStartedAreFound() async throws {
        // GATT objects stay exported after a disconnect: a new session loads them with everything else.
        let f = try await BlueZFixture.make { bluetoothd in
            let path = try await bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService])
            try await bluetoothd.addServices(Self.services, to: path)
        }
        defer { f.stop() }
        let device = Device(session: f.session, path: "/org/bluez/hci0/dev_00_00_00_00_00_01")
        let characteristic = try await device.characteristic(
            service: payService, characteristic: payCharacteristic, timeout: .seconds(1))
        #expect(characteristic.uuid == payCharacteristic)
        #expect(characteristic.flags == ["read", "write", "notify"])
    }

    @Test func characteristicsExportedAfterServicesResolvedAreFound() async throws {
        // bluez/bluez#1489: ServicesResolved can come before the GATT objects are exported.
        let (f, device) = try await connectable(services: [])
        defer { f.stop() }
        _ = try await device.connect()
        #expect(f.session.paths(with: characteristic1Interface, under: device.path).isEmpty)
        let lookup = Task { () throws(BlueZError) in
            try await device.characteristic(service: payService, characteristic: payCharacteristic)
        }
        try await Task.sleep(for: .milliseconds(100))  // bluetoothd exports them a little later
        let exported = try await f.bluetoothd.addServices(Self.services, to: device.path)
        #expect(try await lookup.value.path == exported[3])
    }

    @Test func aMissingCharacteristicIsNotFound() async throws {
        let (f, device) = try await connectable()
        defer { f.stop() }
        _ = try await device.connect()
        let unknown = "00000000-0000-0000-0000-000000000000"
        for (service, characteristic) in [(payService, unknown), (batteryService, payCharacteristic), (unknown, unknown)] {
            let error = await bluezError { () throws(BlueZError) in
                _ = try await device.characteristic(
                    service: service, characteristic: characteristic, timeout: .milliseconds(200))
            }
            #expect(error?.code == .notFound)
        }
    }
}
