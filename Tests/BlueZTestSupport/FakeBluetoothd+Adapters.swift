import DBusKit

extension FakeBluetoothd {
    public func addAdapter(_ name: String, address: String, powered: Bool) async throws {
        let path = try DBusObjectPath("/org/bluez/\(name)")
        if powered { state.withLock { _ = $0.powered.insert(path) } }
        let adapter = DBusInterface(
            "org.bluez.Adapter1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("SetDiscoveryFilter", input: "a{sv}"),
                method("StartDiscovery") { [weak self] _ in
                    try self?.requirePowered(path)
                    guard self?.state.withLock({ $0.discovering.insert(path).inserted }) == true else {
                        throw DBusError.reply(name: "org.bluez.Error.InProgress", "Operation already in progress")
                    }
                    try await self?.set(path, "org.bluez.Adapter1", "Discovering", .boolean(true))
                    return []
                },
                method("RemoveDevice", input: "o") { [weak self] call in
                    let device: DBusObjectPath = try call.arguments[0].decode()
                    guard device.isDescendant(of: path), let self else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    // Removing a connected device disconnects it first.
                    try await dropLink(device)
                    guard await removeTree(device) else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
                method("StopDiscovery") { [weak self] _ in
                    try self?.requirePowered(path)
                    guard self?.state.withLock({ $0.discovering.remove(path) }) != nil else {
                        throw Self.failed("No discovery started")
                    }
                    try await self?.set(path, "org.bluez.Adapter1", "Discovering", .boolean(false))
                    return []
                },
            ]),
            properties: [
                "Address": DBusProperty(.string(address)),
                "Powered": DBusProperty(.boolean(powered), access: .readWrite) { [weak self] value in
                    let on = value == .boolean(true)
                    self?.record("Set Powered", path, [value])
                    // This runs on the connection's thread and must not wait: the rest of powering off follows.
                    if !on { Task { [weak self] in try await self?.poweredOff(path) } }
                    self?.state.withLock { state in
                        if on { state.powered.insert(path) } else { state.powered.remove(path) }
                    }
                },
                "Discovering": DBusProperty(.boolean(false)),
            ])
        let gatt = DBusInterface(
            "org.bluez.GattManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterApplication", input: "oa{sv}") { [weak self] call in
                    try await self?.registerApplication(call)
                    return []
                },
                method("UnregisterApplication", input: "o") { [weak self] call in
                    let root: DBusObjectPath = try call.arguments[0].decode()
                    guard self?.state.withLock({ $0.applications.removeValue(forKey: root) }) != nil else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
            ]))
        let advertising = DBusInterface(
            "org.bluez.LEAdvertisingManager1",
            methods: Dictionary(uniqueKeysWithValues: [
                method("RegisterAdvertisement", input: "oa{sv}") { [weak self] call in
                    try await self?.registerAdvertisement(call)
                    return []
                },
                method("UnregisterAdvertisement", input: "o") { [weak self] call in
                    let path: DBusObjectPath = try call.arguments[0].decode()
                    guard self?.state.withLock({ $0.advertisements.removeValue(forKey: path) }) != nil else {
                        throw DBusError.reply(name: "org.bluez.Error.DoesNotExist", "Does Not Exist")
                    }
                    return []
                },
            ]))
        try await export(path, [adapter, gatt, advertising])
    }

    /// Powers an adapter on or off from bluetoothd's side (AutoEnable, rfkill).
    public func power(_ adapter: String, _ on: Bool) async throws {
        let path = try DBusObjectPath("/org/bluez/\(adapter)")
        if !on { try await poweredOff(path) }
        state.withLock { state in
            if on { state.powered.insert(path) } else { state.powered.remove(path) }
        }
        try await set(path, "org.bluez.Adapter1", "Powered", .boolean(on))
    }

    /// What 5.66 does when an adapter goes off: discovery stops and every link goes down.
    private func poweredOff(_ adapter: DBusObjectPath) async throws {
        let (wasDiscovering, links) = state.withLock { state in
            (state.discovering.remove(adapter) != nil, state.connected.filter { $0.isDescendant(of: adapter) })
        }
        if wasDiscovering { try await set(adapter, "org.bluez.Adapter1", "Discovering", .boolean(false)) }
        for device in links { try await dropLink(device) }
    }

    func requirePowered(_ adapter: DBusObjectPath) throws {
        guard state.withLock({ $0.powered.contains(adapter) }) else {
            throw DBusError.reply(name: "org.bluez.Error.NotReady", "Resource Not Ready")
        }
    }
}
