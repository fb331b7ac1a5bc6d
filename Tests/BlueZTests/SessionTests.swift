import BlueZ
import BlueZTestSupport
import DBusKit
import Testing
import TestSupport

/// The session's mirror of bluetoothd's objects: loaded at start, kept current from signals, reloaded when
/// bluetoothd restarts.
@Suite(.timeLimit(.minutes(1))) struct SessionTests {
    @Test func mirrorStartsFromGetManagedObjects() async throws {
        let f = try await BlueZFixture.make { bluetoothd in
            try await bluetoothd.addDevice("hci1", "11:22:33:44:55:66", uuids: [payService], connected: true)
        }
        defer { f.stop() }
        #expect(f.session.adapters().map(\.name) == ["hci0", "hci1"])
        #expect(f.session.adapters().map(\.address) == ["00:AA:01:00:00:00", "00:AA:01:01:00:00"])
        let device = f.session.properties("/org/bluez/hci1/dev_11_22_33_44_55_66", device1Interface)
        #expect(device?["Address"] == .string("11:22:33:44:55:66"))
        #expect(device?["Connected"] == .boolean(true))
        #expect(device?["UUIDs"] == .strings([payService]))
    }

    @Test func adaptersByName() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let hci1 = try f.session.adapter(named: "hci1")
        #expect(hci1.path == "/org/bluez/hci1")
        #expect(hci1.address == "00:AA:01:01:00:00")
        for missing in ["hci9", "not a name"] {
            let error = await bluezError { () throws(BlueZError) in _ = try f.session.adapter(named: missing) }
            #expect(error?.code == .notFound)
        }
    }

    @Test func signalsUpdateTheMirrorAndAreDeliveredInOrder() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let events = f.session.events()
        let path = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66", uuids: [payService])
        guard case .added(path, let added) = try await first(1, of: events)[0] else {
            Issue.record("expected InterfacesAdded of \(path)")
            return
        }
        #expect(added[device1Interface]?["Address"]?.unwrapped == .string("11:22:33:44:55:66"))
        #expect(f.session.properties(path, device1Interface)?["Connected"] == .boolean(false))

        try await f.bluetoothd.set(path, device1Interface, "Connected", .boolean(true))
        guard case .changed(path, device1Interface, let values) = try await first(1, of: events)[0] else {
            Issue.record("expected PropertiesChanged of \(path)")
            return
        }
        #expect(values == ["Connected": .boolean(true)])
        #expect(f.session.properties(path, device1Interface)?["Connected"] == .boolean(true))
        #expect(f.session.properties(path, device1Interface)?["Address"] == .string("11:22:33:44:55:66"))

        await f.bluetoothd.remove(path)
        guard case .removed(path, let interfaces) = try await first(1, of: events)[0] else {
            Issue.record("expected InterfacesRemoved of \(path)")
            return
        }
        #expect(interfaces == [device1Interface])
        #expect(f.session.properties(path, device1Interface) == nil)
    }

    @Test func aBurstOfChangesArrivesInOrder() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let path = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66")
        _ = try await f.device(path)
        let events = f.session.events()
        for connected in [true, false, true, false, true] {
            try await f.bluetoothd.set(path, device1Interface, "Connected", .boolean(connected))
        }
        let seen = try await first(5, of: events).map { event -> DBusValue? in
            guard case .changed(path, device1Interface, let values) = event else { return nil }
            return values["Connected"]
        }
        #expect(seen == [true, false, true, false, true].map(DBusValue.boolean))
        #expect(f.session.properties(path, device1Interface)?["Connected"] == .boolean(true))
    }

    /// A subscription's transform runs as each event is applied, so it sees the mirror as of that event (not as
    /// of whenever a task got to it), picks only what it wants, and its stream ends with the session.
    @Test func aTransformSeesTheMirrorAsOfItsEvent() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let path = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66")
        let other = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:77")
        _ = try await f.device(path)
        _ = try await f.device(other)
        let session = f.session
        let states = session.changes { event -> [DBusValue?]? in
            guard case .changed(path, device1Interface, let values) = event else { return nil }
            return [values["Connected"], session.properties(path, device1Interface)?["Connected"]]
        }
        let toggles = (0..<40).map { $0 % 2 == 0 }
        for connected in toggles {
            try await f.bluetoothd.set(other, device1Interface, "Connected", .boolean(connected))
            try await f.bluetoothd.set(path, device1Interface, "Connected", .boolean(connected))
        }
        let seen = try await first(toggles.count, of: states)
        #expect(seen == toggles.map { [DBusValue.boolean($0), DBusValue.boolean($0)] })
        session.close()
        var rest = 0
        for await _ in states { rest += 1 }
        #expect(rest == 0)
    }

    /// Subscribers cancelled while events are handed to them: a cancelled stream leaves the session under its
    /// task's lock, so handing out an event must not hold what leaving takes, or both wait for good.
    @Test func subscribersCancelledDuringABurstStallNothing() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let path = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66")
        _ = try await f.device(path)
        let watched = f.session.events()
        for round in 0..<60 {
            let listeners = (0..<8).map { _ in
                Task { [session = f.session] in for await _ in session.events() {} }
            }
            try await f.bluetoothd.set(path, device1Interface, "Connected", .boolean(round % 2 == 0))
            for listener in listeners { listener.cancel() }
        }
        // The session still delivers, every change in order.
        let seen = try await first(60, of: watched).map { event -> DBusValue? in
            guard case .changed(path, device1Interface, let values) = event else { return nil }
            return values["Connected"]
        }
        #expect(seen == (0..<60).map { DBusValue.boolean($0 % 2 == 0) })
    }

    /// A session for one adapter mirrors that adapter alone and hears nothing of the others: on a host with
    /// several, another adapter's discovery once woke every daemon on it.
    @Test func aSessionForOneAdapterHearsOnlyOfIt() async throws {
        let f = try await BlueZFixture.make { bluetoothd in
            try await bluetoothd.addDevice("hci0", "11:22:33:44:55:00")
            try await bluetoothd.addDevice("hci1", "11:22:33:44:55:01")
        }
        defer { f.stop() }
        let scoped = try await BlueZSession.connect(to: .address(f.bus.address), adapter: "hci0")
        defer { scoped.close() }
        #expect(scoped.adapters().map(\.name) == ["hci0"])
        #expect(scoped.properties("/org/bluez/hci0/dev_11_22_33_44_55_00", device1Interface) != nil)
        #expect(scoped.properties("/org/bluez/hci1/dev_11_22_33_44_55_01", device1Interface) == nil)
        let events = scoped.events()

        // All of hci1's changes come first; had any of them reached the session, it would be the first event.
        let elsewhere = try await f.bluetoothd.addDevice("hci1", "11:22:33:44:55:02")
        try await f.bluetoothd.set(elsewhere, device1Interface, "Connected", .boolean(true))
        try await f.bluetoothd.power("hci1", true)
        await f.bluetoothd.remove(elsewhere)
        let here = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:03")
        try await f.bluetoothd.set(here, device1Interface, "Connected", .boolean(true))
        await f.bluetoothd.remove(here)
        await f.bluetoothd.remove("/org/bluez/hci0")
        try await f.bluetoothd.addAdapter("hci0", address: "00:AA:01:00:00:00", powered: true)
        let seen = try await first(5, of: events).map { event -> String in
            switch event {
            case .added(let path, _): "added \(path)"
            case .changed(let path, _, let values): "changed \(path) \(values.keys.sorted())"
            case .removed(let path, _): "removed \(path)"
            case .restarted, .vanished: "\(event)"
            }
        }
        #expect(
            seen == [
                "added \(here)", "changed \(here) [\"Connected\"]", "removed \(here)", "removed /org/bluez/hci0",
                "added /org/bluez/hci0",
            ])
        #expect(try scoped.adapter(named: "hci0").isPowered)
        #expect(f.session.properties(elsewhere, device1Interface) == nil)
        #expect(try f.session.adapter(named: "hci1").isPowered)
    }

    /// A scanning adapter reports every advertiser's signal strength at each scan restart; the session takes none
    /// of it, so those reports wake no task, and the next real change is the next event.
    @Test func signalStrengthAloneWakesNothing() async throws {
        let f = try await BlueZFixture.make()
        defer { f.stop() }
        let path = try await f.bluetoothd.addDevice("hci0", "11:22:33:44:55:66")
        _ = try await f.device(path)
        let events = f.session.events()
        for rssi in [-40, -41, -40] as [Int16] { try await f.bluetoothd.set(path, device1Interface, "RSSI", .int16(rssi)) }
        try await f.bluetoothd.set(path, device1Interface, "Connected", .boolean(true))
        guard case .changed(path, device1Interface, let values) = try await first(1, of: events)[0] else {
            Issue.record("expected PropertiesChanged of \(path)")
            return
        }
        #expect(values == ["Connected": .boolean(true)])
        #expect(f.session.properties(path, device1Interface)?["RSSI"] == .int16(-60))
    }

    @Test func aRestartedBluetoothdIsReloaded() async throws {
        let f = try await BlueZFixture.make { bluetoothd in
            try await bluetoothd.addDevice("hci0", "11:22:33:44:55:66")
        }
        defer { f.stop() }
        let events = f.session.events()

        f.bluetoothd.stop()
        guard case .vanished = try await first(1, of: events)[0] else {
            Issue.record("expected vanished")
            return
        }
        #expect(f.session.adapters().isEmpty)
        #expect(f.session.properties("/org/bluez/hci0/dev_11_22_33_44_55_66", device1Interface) == nil)

        let restarted = try await FakeBluetoothd(bus: f.bus, adapters: ["hci0"], powered: true) { bluetoothd in
            try await bluetoothd.addDevice("hci0", "AA:BB:CC:DD:EE:FF")
        }
        defer { restarted.stop() }
        guard case .restarted = try await first(1, of: events)[0] else {
            Issue.record("expected restarted")
            return
        }
        #expect(f.session.adapters().map(\.name) == ["hci0"])
        #expect(try f.session.adapter(named: "hci0").isPowered)
        #expect(f.session.properties("/org/bluez/hci0/dev_11_22_33_44_55_66", device1Interface) == nil)
        #expect(f.session.properties("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF", device1Interface) != nil)

        // Signals from the new bluetoothd are followed.
        try await restarted.power("hci0", false)
        try await mirrored(f.session, "hci0 powered off") { [session = f.session] in
            (try? session.adapter(named: "hci0").isPowered) == false
        }
    }
}
