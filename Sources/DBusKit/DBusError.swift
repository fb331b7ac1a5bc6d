/// A failure in DBusKit, with a stable code; remote errors keep their D-Bus error name and message.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, documented error codes. New codes may be added; existing ones never change meaning.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The bus could not be reached or refused us.
        public static let connectionFailed = Code(rawValue: "dbus.connection-failed")
        /// The connection closed while the operation was pending, or was already closed.
        public static let disconnected = Code(rawValue: "dbus.disconnected")
        /// No reply came within the call's timeout.
        public static let timeout = Code(rawValue: "dbus.timeout")
        /// The peer answered with a D-Bus error; `name` and `message` say which.
        public static let remote = Code(rawValue: "dbus.remote")
        /// A message's signature or a value's type was not the expected one.
        public static let typeMismatch = Code(rawValue: "dbus.type-mismatch")
        /// A value cannot be sent: invalid object path, signature, name or string.
        public static let invalidValue = Code(rawValue: "dbus.invalid-value")
        /// The requested well-known name is owned by someone else.
        public static let nameNotAcquired = Code(rawValue: "dbus.name-not-acquired")
        /// The task waiting for the reply was cancelled.
        public static let cancelled = Code(rawValue: "dbus.cancelled")
        /// An object is already exported at that path.
        public static let pathInUse = Code(rawValue: "dbus.path-in-use")
    }

    public let code: Code
    /// The D-Bus error name, for remote errors (e.g. `org.bluez.Error.Failed`) and errors we reply with.
    public let name: String?
    public let message: String

    public init(_ code: Code, name: String? = nil, _ message: String) {
        self.code = code
        self.name = name
        self.message = message
    }

    /// An error to reply with from an exported method: the peer sees `name` and `message`.
    public static func reply(name: String, _ message: String) -> DBusError {
        DBusError(.remote, name: name, message)
    }

    public var description: String {
        if let name { return "\(code) \(name): \(message)" }
        return "\(code): \(message)"
    }
}

extension DBusError {
    static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    static let failedName = "org.freedesktop.DBus.Error.Failed"
    static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
    static let unknownObjectName = "org.freedesktop.DBus.Error.UnknownObject"
    static let unknownInterfaceName = "org.freedesktop.DBus.Error.UnknownInterface"
    static let unknownPropertyName = "org.freedesktop.DBus.Error.UnknownProperty"
    static let propertyReadOnlyName = "org.freedesktop.DBus.Error.PropertyReadOnly"

    /// Maps an error reply to a typed error; timeouts and disconnects keep their own codes.
    static func fromReply(name: String, message: String) -> DBusError {
        switch name {
        case noReplyName: DBusError(.timeout, name: name, message)
        case disconnectedName: DBusError(.disconnected, name: name, message)
        default: DBusError(.remote, name: name, message)
        }
    }

    static func typeMismatch(expected: String, actual: String, _ context: String = "value") -> DBusError {
        DBusError(.typeMismatch, "\(context): expected signature '\(expected)', got '\(actual)'")
    }
}
