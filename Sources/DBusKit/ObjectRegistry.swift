import Logging

/// The objects a connection exports, and the answers to calls on them: the objects' own methods plus the
/// standard `Properties`, `ObjectManager` and `Introspectable` interfaces. Confined to the loop thread;
/// everything it answers itself is answered at once, and user methods run in tasks, so the loop never waits.
final class ObjectRegistry: @unchecked Sendable {
    struct Object {
        var interfaces: [String: DBusInterface]
        var isObjectManager: Bool
        let token: UInt64
    }

    static let properties = "org.freedesktop.DBus.Properties"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let introspectable = "org.freedesktop.DBus.Introspectable"

    private(set) var objects: [DBusObjectPath: Object] = [:]
    private let logger: Logger
    /// Sends a signal on the connection.
    private let emit: (RawMessage) -> Void

    init(logger: Logger, emit: @escaping (RawMessage) -> Void) {
        self.logger = logger
        self.emit = emit
    }

    // MARK: Changes

    func add(_ path: DBusObjectPath, _ object: Object) throws(DBusError) {
        guard objects[path] == nil else { throw DBusError(.pathInUse, "an object is already exported at \(path)") }
        for interface in object.interfaces.values {
            for property in interface.properties.values { try Marshalling.validate(property.value) }
        }
        objects[path] = object
        guard let manager = manager(of: path) else { return }
        let added: [DBusValue] = [.objectPath(path), Self.interfacesAndProperties(object)]
        emit(try .signal(path: manager, interface: Self.objectManager, member: "InterfacesAdded", arguments: added))
    }

    func remove(_ path: DBusObjectPath, token: UInt64) {
        guard let object = objects[path], object.token == token else { return }
        objects[path] = nil
        guard let manager = manager(of: path) else { return }
        let removed: [DBusValue] = [.objectPath(path), .strings(object.interfaces.keys.sorted())]
        if let signal = try? RawMessage.signal(
            path: manager, interface: Self.objectManager, member: "InterfacesRemoved", arguments: removed)
        {
            emit(signal)
        }
    }

    func set(
        _ value: DBusValue, property: String, interface: String, at path: DBusObjectPath, token: UInt64
    ) throws(DBusError) {
        guard var object = objects[path], object.token == token else {
            throw DBusError(.invalidValue, "no object exported at \(path)")
        }
        guard var property0 = object.interfaces[interface]?.properties[property] else {
            throw DBusError(.invalidValue, "\(path) has no property \(interface).\(property)")
        }
        guard property0.value.signatureString == value.signatureString else {
            throw .typeMismatch(expected: property0.value.signatureString, actual: value.signatureString, property)
        }
        try Marshalling.validate(value)
        property0.value = value
        object.interfaces[interface]!.properties[property] = property0
        objects[path] = object
        emit(try Self.propertiesChanged(path: path, interface: interface, changed: [property: value]))
    }

    static func propertiesChanged(
        path: DBusObjectPath, interface: String, changed: [String: DBusValue]
    ) throws(DBusError) -> RawMessage {
        try .signal(
            path: path, interface: properties, member: "PropertiesChanged",
            arguments: [.string(interface), .stringDictionary(changed), .strings([])])
    }

    /// The nearest object manager strictly above `path`.
    private func manager(of path: DBusObjectPath) -> DBusObjectPath? {
        objects.filter { $0.value.isObjectManager && path.isDescendant(of: $0.key) }
            .keys.max { $0.rawValue.count < $1.rawValue.count }
    }

    private static func interfacesAndProperties(_ object: Object) -> DBusValue {
        .dictionary(
            key: "s", value: "a{sv}",
            object.interfaces.values.sorted { $0.name < $1.name }.map {
                DBusDictEntry(key: .string($0.name), value: .stringDictionary($0.properties.mapValues(\.value)))
            })
    }

    // MARK: Calls

    /// Answers a method call; returns false for anything that is not one.
    func handle(_ message: DBusMessage, reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) -> Bool {
        guard message.kind == .methodCall, let path = message.path, let member = message.member else { return false }
        let object = objects[path]
        switch (message.interface, member) {
        case (Self.introspectable, "Introspect"), (nil, "Introspect"):
            guard object != nil || hasChildren(path) else { reply(.failure(unknownObject(path))); return true }
            reply(.success([.string(Introspection.xml(object: object, children: children(of: path)))]))
            return true
        case (Self.objectManager, "GetManagedObjects"):
            guard let object, object.isObjectManager else {
                reply(.failure(.reply(name: DBusError.unknownMethodName, "\(path) is not an object manager")))
                return true
            }
            reply(.success([managedObjects(below: path)]))
            return true
        case (nil, "GetManagedObjects") where object?.isObjectManager == true:
            reply(.success([managedObjects(below: path)]))
            return true
        case (Self.properties, _):
            guard let object else { reply(.failure(unknownObject(path))); return true }
            reply(properties(call: message, member: member, object: object, path: path))
            return true
        default:
            break
        }
        guard let object else { reply(.failure(unknownObject(path))); return true }
        let candidates = message.interface.map { object.interfaces[$0].map { [$0] } ?? [] } ?? Array(object.interfaces.values)
        guard let method = candidates.lazy.compactMap({ $0.methods[member] }).first else {
            reply(.failure(.reply(
                name: DBusError.unknownMethodName, "no method \(message.interface ?? "").\(member) at \(path)")))
            return true
        }
        guard message.signature == method.input else {
            reply(.failure(.reply(
                name: DBusError.invalidArgsName, "\(member) takes '\(method.input)', got '\(message.signature)'")))
            return true
        }
        let call = DBusMethodCall(message: message)
        let logger = self.logger
        if let ordered = method.ordered {
            reply(Self.result(of: member, method, logger) { try ordered(call) })
            return true
        }
        Task {
            let values: Result<[DBusValue], any Error>
            do { values = .success(try await method.handler(call)) } catch { values = .failure(error) }
            reply(Self.result(of: member, method, logger) { try values.get() })
        }
        return true
    }

    /// The reply to a call: the handler's values if they have the method's output signature, else an error.
    private static func result(
        of member: String, _ method: DBusMethod, _ logger: Logger, _ values: () throws -> [DBusValue]
    ) -> Result<[DBusValue], DBusError> {
        do {
            let values = try values()
            let signature = values.map(\.signatureString).joined()
            guard signature == method.output.rawValue else {
                logger.error("exported method returned the wrong signature",
                    metadata: ["member": "\(member)", "expected": "\(method.output)", "got": "\(signature)"])
                return .failure(.reply(name: DBusError.failedName, "internal error"))
            }
            return .success(values)
        } catch let error as DBusError {
            return .failure(error)
        } catch {
            return .failure(.reply(name: DBusError.failedName, "\(error)"))
        }
    }

    private func properties(
        call: DBusMessage, member: String, object: Object, path: DBusObjectPath
    ) -> Result<[DBusValue], DBusError> {
        func interface(_ name: String) -> Result<DBusInterface, DBusError> {
            object.interfaces[name].map { .success($0) }
                ?? .failure(.reply(name: DBusError.unknownInterfaceName, "\(path) has no interface \(name)"))
        }
        func property(_ i: DBusInterface, _ name: String) -> Result<DBusProperty, DBusError> {
            i.properties[name].map { .success($0) }
                ?? .failure(.reply(name: DBusError.unknownPropertyName, "\(i.name) has no property \(name)"))
        }
        let args = call.arguments
        switch (member, call.signature.rawValue) {
        case ("Get", "ss"):
            let (i, p) = (args[0].stringValue, args[1].stringValue)
            return interface(i).flatMap { property($0, p) }.map { [.variant($0.value)] }
        case ("GetAll", "s"):
            return interface(args[0].stringValue).map { [.stringDictionary($0.properties.mapValues(\.value))] }
        case ("Set", "ssv"):
            let (i, p, value) = (args[0].stringValue, args[1].stringValue, args[2].unwrapped)
            return interface(i).flatMap { property($0, p) }.flatMap { prop in
                guard prop.access == .readWrite else {
                    return .failure(.reply(name: DBusError.propertyReadOnlyName, "\(i).\(p) is read-only"))
                }
                guard prop.value.signatureString == value.signatureString else {
                    return .failure(.reply(
                        name: DBusError.invalidArgsName, "\(p) is '\(prop.value.signatureString)', got '\(value.signatureString)'"))
                }
                do {
                    try prop.onSet?(value)
                    try set(value, property: p, interface: i, at: path, token: object.token)
                } catch let error as DBusError {
                    return .failure(error.name == nil ? .reply(name: DBusError.invalidArgsName, error.message) : error)
                } catch {
                    return .failure(.reply(name: DBusError.invalidArgsName, "\(error)"))
                }
                return .success([])
            }
        default:
            return .failure(.reply(
                name: DBusError.invalidArgsName, "bad call Properties.\(member) with '\(call.signature)'"))
        }
    }

    private func managedObjects(below root: DBusObjectPath) -> DBusValue {
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            objects.filter { $0.key.isDescendant(of: root) }.sorted { $0.key < $1.key }.map {
                DBusDictEntry(key: .objectPath($0.key), value: Self.interfacesAndProperties($0.value))
            })
    }

    private func hasChildren(_ path: DBusObjectPath) -> Bool {
        objects.keys.contains { $0.isDescendant(of: path) }
    }

    /// Names of the nodes directly below `path` that lead to exported objects.
    private func children(of path: DBusObjectPath) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        let names = objects.keys.filter { $0.isDescendant(of: path) }.compactMap {
            $0.rawValue.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
        }
        return Set(names).sorted()
    }

    private func unknownObject(_ path: DBusObjectPath) -> DBusError {
        .reply(name: DBusError.unknownObjectName, "no object at \(path)")
    }
}
