import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// A connected device's characteristic, as a central reads, writes and subscribes to it.
@Suite(.timeLimit(.minutes(1))) struct RemoteCharacteristicTests {
    /// A fixture with a connected device and its pay characteristic, whose value is [1, 2, 3].
    func connected() async throws -> (BlueZFixture, RemoteCharacteristic) {
        let f = try await BlueZFixture.make()
        let services: [FakeBluetoothd.RemoteService] = [
            .init(uuid: payService, characteristics: [.init(uuid: payCharacteristic, value: [1, 2, 3])])
        ]
        let path = try await f.bluetoothd.addDevice("hci0", "00:00:00:00:00:01", uuids: [payService], services: services)
        let device = try await f.device(path)
        _ = try await device.connect()
        return (f, try await device.characteristic(service: payService, characteristic: payCharacteristic))
    }

    @Test func writeSendsTheBytesWithItsType() async throws {
        let (f, characteristic) = try await connected()
        defer { f.stop() }
        try await characteristic.write([0, 9, 8, 7, 0xff])
        try await characteristic.write([1], type: .command)
        #expect(f.bluetoothd.calls("WriteValue").map(\.path) == [characteristic.path, characteristic.path])
        #expect(f.bluetoothd.calls("WriteValue").map(\.arguments) == [
            [.bytes([0, 9, 8, 7, 0xff]), .stringDictionary(["type": .string("request")])],
            [.bytes([1]), .stringDictionary(["type": .string("command")])],
        ])
    }

    @Test func operationsAnsweredInProgressAreRetried() async throws {
        let (f, characteristic) = try await connected()
        defer { f.stop() }
        f.bluetoothd.answerInProgress(characteristic.path, "WriteValue", times: 2)
        try await characteristic.write([4, 5])
        let writes = f.bluetoothd.calls("WriteValue").map(\.arguments)
        #expect(writes == Array(repeating: [.bytes([4, 5]), .stringDictionary(["type": .string("request")])], count: 3))

        f.bluetoothd.answerInProgress(characteristic.path, "ReadValue", times: 3)
        #expect(try await characteristic.read() == [4, 5])
        #expect(f.bluetoothd.calls("ReadValue").count == 4)
    }

    @Test func readReturnsTheValueFromTheOffset() async throws {
        let (f, characteristic) = try await connected()
        defer { f.stop() }
        #expect(try await characteristic.read() == [1, 2, 3])
        #expect(try await characteristic.read(offset: 1) == [2, 3])
        #expect(f.bluetoothd.calls("ReadValue").map(\.arguments) == [
            [.stringDictionary([:])], [.stringDictionary(["offset": .uint16(1)])],
        ])
    }

    @Test func notificationsYieldEveryValueInOrder() async throws {
        let (f, characteristic) = try await connected()
        defer { f.stop() }
        let notifications = try await characteristic.notifications()
        // bluetoothd sets Notifying only after replying to StartNotify: returning means it was awaited.
        #expect(f.session.properties(characteristic.path, characteristic1Interface)?["Notifying"] == .boolean(true))
        #expect(f.bluetoothd.calls("StartNotify").map(\.path) == [characteristic.path])
        let values: [[UInt8]] = [[1], [1], [2, 3], [1], []]
        for value in values { try await f.bluetoothd.notify(characteristic.path, value) }
        #expect(try await first(values.count, of: notifications) == values)
    }

    @Test func subscribingWhileBluetoothdRearmsWaitsForNotifying() async throws {
        let (f, characteristic) = try await connected()
        defer { f.stop() }
        // 5.66 re-arms a subscription after a reconnect by itself; StartNotify meanwhile answers InProgress.
        f.bluetoothd.rearmSubscription(characteristic.path)
        let notifications = try await characteristic.notifications()
        #expect(f.session.properties(characteristic.path, characteristic1Interface)?["Notifying"] == .boolean(true))
        #expect(f.bluetoothd.calls("StartNotify").count == 1)
        try await f.bluetoothd.notify(characteristic.path, [7])
        #expect(try await first(1, of: notifications) == [[7]])
    }
}
