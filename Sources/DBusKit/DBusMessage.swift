import CDBus

/// A received D-Bus message, fully decoded.
public struct DBusMessage: Sendable {
    public enum Kind: Sendable, Hashable { case methodCall, methodReturn, error, signal }

    public let kind: Kind
    public let path: DBusObjectPath?
    public let interface: String?
    public let member: String?
    public let sender: String?
    public let destination: String?
    public let errorName: String?
    public let signature: DBusSignature
    public let arguments: [DBusValue]

    init(_ raw: OpaquePointer) {
        switch dbus_message_get_type(raw) {
        case CDBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case CDBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case CDBUS_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        path = dbus_message_get_path(raw).map { DBusObjectPath(unchecked: String(cString: $0)) }
        interface = dbus_message_get_interface(raw).map { String(cString: $0) }
        member = dbus_message_get_member(raw).map { String(cString: $0) }
        sender = dbus_message_get_sender(raw).map { String(cString: $0) }
        destination = dbus_message_get_destination(raw).map { String(cString: $0) }
        errorName = dbus_message_get_error_name(raw).map { String(cString: $0) }
        signature = DBusSignature(unchecked: dbus_message_get_signature(raw).map { String(cString: $0) } ?? "")
        arguments = Marshalling.readAll(raw)
    }

    /// The arguments, after checking that the message's signature is exactly `expected`.
    public func arguments(expecting expected: DBusSignature) throws(DBusError) -> [DBusValue] {
        guard signature == expected else {
            throw DBusError.typeMismatch(
                expected: expected.rawValue, actual: signature.rawValue,
                "\(interface ?? "?").\(member ?? errorName ?? "reply")")
        }
        return arguments
    }

    /// The single argument of a message whose signature must be exactly `expected`.
    public func argument(expecting expected: DBusSignature) throws(DBusError) -> DBusValue {
        try arguments(expecting: expected)[0]
    }

    /// The first string argument: the message of an error reply.
    var errorText: String {
        if case .string(let s) = arguments.first { return s }
        return ""
    }
}

/// Owns one reference to a libdbus message; confined to whoever holds it.
final class RawMessage: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over a reference the caller owns.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    /// Adds a reference of its own.
    init(retaining pointer: OpaquePointer) {
        self.pointer = dbus_message_ref(pointer)
    }

    deinit { dbus_message_unref(pointer) }

    static func methodCall(
        destination: String?, path: DBusObjectPath, interface: String?, member: String, arguments: [DBusValue]
    ) throws(DBusError) -> RawMessage {
        try checkNames(interface: interface, member: member, destination: destination)
        guard let m = dbus_message_new_method_call(destination, path.rawValue, interface, member) else {
            preconditionFailure("libdbus is out of memory")
        }
        let message = RawMessage(owning: m)
        try Marshalling.append(arguments, to: m)
        return message
    }

    static func signal(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue]) throws(DBusError)
        -> RawMessage
    {
        try checkNames(interface: interface, member: member, destination: nil)
        guard let m = dbus_message_new_signal(path.rawValue, interface, member) else {
            preconditionFailure("libdbus is out of memory")
        }
        let message = RawMessage(owning: m)
        try Marshalling.append(arguments, to: m)
        return message
    }

    func methodReturn(_ arguments: [DBusValue]) throws(DBusError) -> RawMessage {
        guard let m = dbus_message_new_method_return(pointer) else { preconditionFailure("libdbus is out of memory") }
        let reply = RawMessage(owning: m)
        try Marshalling.append(arguments, to: m)
        return reply
    }

    func errorReply(name: String, message text: String) -> RawMessage {
        let name = dbus_validate_error_name(name, nil) != 0 ? name : DBusError.failedName
        let safeText = String(text.unicodeScalars.filter { $0 != "\0" })
        guard let m = dbus_message_new_error(pointer, name, safeText) else {
            preconditionFailure("libdbus is out of memory")
        }
        return RawMessage(owning: m)
    }

    var noReplyExpected: Bool { dbus_message_get_no_reply(pointer) != 0 }

    private static func checkNames(interface: String?, member: String, destination: String?) throws(DBusError) {
        if let interface, dbus_validate_interface(interface, nil) == 0 {
            throw DBusError(.invalidValue, "invalid interface name '\(interface)'")
        }
        guard dbus_validate_member(member, nil) != 0 else {
            throw DBusError(.invalidValue, "invalid member name '\(member)'")
        }
        if let destination, dbus_validate_bus_name(destination, nil) == 0 {
            throw DBusError(.invalidValue, "invalid bus name '\(destination)'")
        }
    }
}
