import DBusKit

extension FakeBluetoothd {
    /// A remote device known to `adapter`, with what it advertises. `services` are exported when it first connects;
    /// `connectOutcome`, if given, is what its `Connect` calls do (by call number) instead of `connectOutcome`'s.
    @discardableResult
    public func addDevice(
        _ adapter: String, _ address: String, uuids: [String] = [], serviceData: [String: [UInt8]] = [:],
        connected: Bool = false, services: [RemoteService] = [],
        connectOutcome: (@Sendable (Int) -> ConnectOutcome)? = nil
    ) async throws -> DBusObjectPath {
        let path = try DBusObjectPath("/org/bluez/\(adapter)/dev_\(address.replacingOccurrences(of: ":", with: "_"))")
        state.withLock {
            $0.pendingServices[path] = services
            $0.connectOutcomes[path] = connectOutcome
            if connected { $0.connected.insert(path) }
        }
        let device = DBusInterface(
            "org.bluez.Device1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("Connect") { [weak self] _ in
                    try await self?.connect(path)
                    return []
                },
                method("Disconnect") { [weak self] _ in
                    guard let self, isConnected(path) else {
                        throw DBusError.reply(name: "org.bluez.Error.NotConnected", "Not Connected")
                    }
                    state.withLock { state in
                        state.linkEvents.append(
                            .disconnectCalled(path, unansweredWrites: state.unansweredWrites[path, default: 0]))
                    }
                    try await dropLink(path)
                    return []
                },
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Adapter": DBusProperty(.objectPath(try DBusObjectPath("/org/bluez/\(adapter)"))),
                "UUIDs": DBusProperty(.strings(uuids)),
                // As `parse_service_data` gives it: UUID → <ay>.
                "ServiceData": DBusProperty(
                    .dictionary(
                        key: "s", value: "v",
                        serviceData.sorted { $0.key < $1.key }.map {
                            DBusDictEntry(key: .string($0.key), value: .variant(.bytes($0.value)))
                        })),
                "Connected": DBusProperty(.boolean(connected)),
                "ServicesResolved": DBusProperty(.boolean(false)),
                "RSSI": DBusProperty(.int16(-60)),
            ])
        try await export(path, [device])
        return path
    }

    /// Calls `observer` with each change of the device's link: up when it connects, down when it goes away.
    public func observeLink(_ device: DBusObjectPath, _ observer: @escaping @Sendable (Bool) -> Void) {
        state.withLock { $0.linkObservers[device] = observer }
    }

    /// The remote device's link goes down from its side (out of range, switched off).
    public func loseLink(_ device: DBusObjectPath) async throws {
        try await dropLink(device)
    }

    /// The path of the exported remote characteristic `uuid` of `device`.
    public func characteristic(_ uuid: String, of device: DBusObjectPath) -> DBusObjectPath? {
        state.withLock { state in
            state.characteristics.first { $0.value == uuid && $0.key.isDescendant(of: device) }?.key
        }
    }

    /// Brings the link down as 5.66 announces it, `ServicesResolved` before `Connected`; a central's subscriptions
    /// to applications end with it. Nothing happens without a link.
    func dropLink(_ device: DBusObjectPath) async throws {
        let observer: (@Sendable (Bool) -> Void)? = state.withLock { state in
            guard state.connected.remove(device) != nil else { return nil }
            return state.linkObservers[device] ?? { _ in }
        }
        guard let observer else { return }
        try await set(device, "org.bluez.Device1", "ServicesResolved", .boolean(false))
        try await set(device, "org.bluez.Device1", "Connected", .boolean(false))
        observer(false)
        try await unsubscribeAll(device)
    }

    private func connect(_ path: DBusObjectPath) async throws {
        let (attempt, outcomes) = state.withLock { state in
            state.connectAttempts[path, default: 0] += 1
            return (state.connectAttempts[path, default: 1], state.connectOutcomes[path])
        }
        let outcome = (outcomes ?? connectOutcome.withLock { $0 })(attempt)
        if case .fail(let error) = outcome { throw error }
        let observer = state.withLock { state in
            state.connected.insert(path)
            return state.linkObservers[path]
        }
        observer?(true)
        try await set(path, "org.bluez.Device1", "Connected", .boolean(true))
        // 5.66 replies once the link and ATT are up; service discovery follows.
        Task {
            try await Task.sleep(for: .milliseconds(50))
            switch outcome {
            case .dropDuringDiscovery:
                try await dropLink(path)
            case .stallDiscovery, .fail:
                break
            case .connect:
                let services = state.withLock { $0.pendingServices.removeValue(forKey: path) } ?? []
                try await addServices(services, to: path)
                try await set(path, "org.bluez.Device1", "ServicesResolved", .boolean(true))
            }
        }
    }

    /// Exports GATT services under `device` as bluetoothd names them (`serviceHHHH/charHHHH`, by handle);
    /// returns the characteristics' paths in order.
    @discardableResult
    public func addServices(_ services: [RemoteService], to device: DBusObjectPath) async throws -> [DBusObjectPath] {
        var paths: [DBusObjectPath] = []
        for service in services {
            var handle = state.withLock { state in
                defer { state.nextHandle[device, default: 1] += 1 + service.characteristics.count * 2 }
                return state.nextHandle[device, default: 1]
            }
            let servicePath = try device.appending("service" + hex4(handle))
            try await export(servicePath, [
                DBusInterface("org.bluez.GattService1", properties: [
                    "UUID": DBusProperty(.string(service.uuid)), "Device": DBusProperty(.objectPath(device)),
                    "Primary": DBusProperty(.boolean(true)),
                ])
            ])
            for characteristic in service.characteristics {
                handle += 2
                let path = try servicePath.appending("char" + hex4(handle))
                try await addCharacteristic(characteristic, at: path, service: servicePath)
                paths.append(path)
            }
        }
        return paths
    }

    /// A notification (or indication) from the remote device: `Value` changes.
    public func notify(_ path: DBusObjectPath, _ value: [UInt8]) async throws {
        state.withLock { $0.values[path] = value }
        try await set(path, "org.bluez.GattCharacteristic1", "Value", .bytes(value))
    }

    private func addCharacteristic(
        _ spec: RemoteCharacteristicSpec, at path: DBusObjectPath, service: DBusObjectPath
    ) async throws {
        state.withLock {
            $0.values[path] = spec.value
            $0.characteristics[path] = spec.uuid
        }
        let interface = DBusInterface(
            "org.bluez.GattCharacteristic1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("ReadValue", input: "a{sv}", output: "ay") { [weak self] call in
                    guard let self else { return [.bytes([])] }
                    let options: [String: DBusValue] = try call.arguments[0].decode()
                    let offset = Int(try options["offset"]?.decode(UInt16.self) ?? 0)
                    let value = state.withLock { $0.values[path] ?? [] }
                    guard offset <= value.count else {
                        throw DBusError.reply(name: "org.bluez.Error.InvalidOffset", "Invalid offset")
                    }
                    try await set(path, "org.bluez.GattCharacteristic1", "Value", .bytes(value))
                    return [.bytes(Array(value[offset...]))]
                },
                method("WriteValue", input: "aya{sv}") { [weak self] call in
                    let value: [UInt8] = (try? call.arguments[0].decode()) ?? []
                    self?.state.withLock { $0.values[path] = value }
                    try await spec.onWrite?(value)
                    return []
                },
                method("StartNotify") { [weak self] _ in
                    self?.setNotifyingShortly(path, true)
                    if self?.state.withLock({ $0.rearming.remove(path) }) != nil {
                        throw DBusError.reply(name: "org.bluez.Error.InProgress", "In Progress")
                    }
                    return []
                },
                method("StopNotify") { [weak self] _ in
                    self?.setNotifyingShortly(path, false)
                    return []
                },
            ]),
            properties: [
                "UUID": DBusProperty(.string(spec.uuid)), "Service": DBusProperty(.objectPath(service)),
                "Flags": DBusProperty(.strings(spec.flags)), "Value": DBusProperty(.bytes(spec.value)),
                "Notifying": DBusProperty(.boolean(false)), "MTU": DBusProperty(.uint16(517)),
            ])
        try await export(path, [interface])
    }

    /// `Notifying` changes after the reply (the CCC write completes later).
    private func setNotifyingShortly(_ path: DBusObjectPath, _ on: Bool) {
        Task {
            try await Task.sleep(for: .milliseconds(20))
            try await set(path, "org.bluez.GattCharacteristic1", "Notifying", .boolean(on))
        }
    }
}

private func hex4(_ n: Int) -> String {
    let digits = String(n, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
