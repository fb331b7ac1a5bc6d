import DBusKit

extension FakeBluetoothd {
    func registerApplication(_ call: DBusMethodCall) async throws {
        let root: DBusObjectPath = try call.arguments[0].decode()
        guard state.withLock({ $0.applications[root] == nil }) else {
            throw DBusError.reply(name: "org.bluez.Error.AlreadyExists", "Already Exists")
        }
        // Read the whole application from the caller before replying.
        let reply = try await connection.call(
            destination: call.sender, path: root, interface: Self.objectManagerInterface, member: "GetManagedObjects",
            timeout: .seconds(5))
        let objects = try reply.argument(expecting: "a{oa{sa{sv}}}").decode(
            [DBusObjectPath: [String: [String: DBusValue]]].self
        ).mapValues { $0.mapValues { $0.mapValues(\.unwrapped) } }
        try Self.validateApplication(objects)
        state.withLock { $0.applications[root] = Registration(owner: call.sender, path: root, objects: objects) }
    }

    /// What bluetoothd needs to build its GATT database: services with UUIDs, characteristics with a UUID,
    /// flags and a `Service` that is one of the application's services.
    private static func validateApplication(_ objects: [DBusObjectPath: [String: [String: DBusValue]]]) throws {
        let services = objects.filter { $0.value["org.bluez.GattService1"] != nil }
        guard !services.isEmpty else { throw failed("No object received") }
        for (_, interfaces) in services {
            guard isUUID(interfaces["org.bluez.GattService1"]?["UUID"]) else { throw failed("Failed to parse UUID") }
        }
        for (path, interfaces) in objects {
            guard let properties = interfaces["org.bluez.GattCharacteristic1"] else { continue }
            guard isUUID(properties["UUID"]), let service = try? properties["Service"]?.decode(DBusObjectPath.self),
                services[service] != nil, path.isDescendant(of: service),
                let flags = try? properties["Flags"]?.decode([String].self), !flags.isEmpty
            else { throw failed("Failed to create entry in database") }
        }
    }

    private static func isUUID(_ value: DBusValue?) -> Bool {
        guard let uuid = try? value?.decode(String.self) else { return false }
        let groups = uuid.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
        return groups == [8, 4, 4, 4, 12] && uuid.allSatisfy { $0 == "-" || $0.isHexDigit }
    }

    func registerAdvertisement(_ call: DBusMethodCall) async throws {
        let path: DBusObjectPath = try call.arguments[0].decode()
        guard state.withLock({ $0.advertisements[path] == nil }) else {
            throw DBusError.reply(name: "org.bluez.Error.AlreadyExists", "Already Exists")
        }
        // gdbus's client tries the object manager first; an error sends it to Properties.GetAll.
        _ = try? await connection.call(
            destination: call.sender, path: path, interface: Self.objectManagerInterface, member: "GetManagedObjects",
            timeout: .seconds(5))
        let reply = try await connection.call(
            destination: call.sender, path: path, interface: Self.propertiesInterface, member: "GetAll",
            arguments: [.string("org.bluez.LEAdvertisement1")], timeout: .seconds(5))
        let properties = try reply.argument(expecting: "a{sv}").decode([String: DBusValue].self).mapValues(\.unwrapped)
        guard properties["Type"] == .string("peripheral") || properties["Type"] == .string("broadcast"),
            properties["ServiceUUIDs"].map({ $0.signature == "as" }) ?? true,
            properties["ServiceData"].map(Self.isServiceData) ?? true
        else { throw Self.failed("Failed to parse advertisement.") }
        let registration = Registration(
            owner: call.sender, path: path, objects: [path: ["org.bluez.LEAdvertisement1": properties]])
        let onAdvertised = state.withLock { state in
            state.advertisements[path] = registration
            defer { state.onAdvertised = nil }
            return state.onAdvertised
        }
        try await onAdvertised?()
    }

    /// `a{sv}` of UUID to `<ay>`, as `parse_service_data` reads it.
    private static func isServiceData(_ value: DBusValue) -> Bool {
        guard case .dictionary("s", "v", let entries) = value else { return false }
        return entries.allSatisfy { entry in
            guard case .variant(.bytes) = entry.value else { return false }
            return true
        }
    }
}
