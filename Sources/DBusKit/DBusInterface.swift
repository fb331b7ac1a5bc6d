/// An interface to export on an object: its methods, properties and the signals it may emit, as data.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [String: DBusMethod]
    public var properties: [String: DBusProperty]
    /// Signal names and their signatures, for introspection.
    public var signals: [String: DBusSignature]
    /// Signals' argument names, for introspection.
    public var signalArgumentNames: [String: [String]]

    public init(
        _ name: String, methods: [String: DBusMethod] = [:], properties: [String: DBusProperty] = [:],
        signals: [String: DBusSignature] = [:], signalArgumentNames: [String: [String]] = [:]
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
        self.signalArgumentNames = signalArgumentNames
    }

    /// The interface alone as introspection XML, as installed under `/usr/share/dbus-1/interfaces/`.
    public var introspectionXML: String {
        ([
            #"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN""#,
            #" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">"#, "<node>",
        ] + Introspection.describe(self) + ["</node>"]).joined(separator: "\n") + "\n"
    }
}

/// An incoming method call on an exported object.
public struct DBusMethodCall: Sendable {
    public let message: DBusMessage
    public var arguments: [DBusValue] { message.arguments }
    /// The caller's unique bus name.
    public var sender: String { message.sender ?? "" }
}

/// A method of an exported interface. Calls whose signature is not `input` are refused with `InvalidArgs`
/// before the handler runs. The handler runs in its own task, so it may await anything, including calls back
/// to the caller; or, made with `ordered`, on the connection's thread before the next message is looked at, so
/// that calls are handled in the order they arrived (a caller that does not wait for replies, such as bluetoothd
/// passing on GATT write commands, may have many in flight). Throwing a `DBusError` with a `name` replies with
/// that error name.
public struct DBusMethod: Sendable {
    public typealias Handler = @Sendable (DBusMethodCall) async throws -> [DBusValue]
    /// Runs on the connection's thread: it must be quick and must not wait for the bus.
    public typealias OrderedHandler = @Sendable (DBusMethodCall) throws -> [DBusValue]

    public var input: DBusSignature
    public var output: DBusSignature
    /// The arguments' names, for introspection (none, or one per complete type of the signature).
    public var inputNames: [String]
    public var outputNames: [String]
    public var handler: Handler
    /// Set for a method made with `ordered`.
    public var ordered: OrderedHandler?

    public init(
        input: DBusSignature = "", output: DBusSignature = "", inputNames: [String] = [], outputNames: [String] = [],
        _ handler: @escaping Handler
    ) {
        self.input = input
        self.output = output
        self.inputNames = inputNames
        self.outputNames = outputNames
        self.handler = handler
    }

    /// A method whose calls are handled on the connection's thread, in the order they came.
    public static func ordered(
        input: DBusSignature = "", output: DBusSignature = "", inputNames: [String] = [], outputNames: [String] = [],
        _ handler: @escaping OrderedHandler
    ) -> DBusMethod {
        var method = DBusMethod(input: input, output: output, inputNames: inputNames, outputNames: outputNames) {
            try handler($0)
        }
        method.ordered = handler
        return method
    }
}

/// A property of an exported interface. Its value is kept by DBusKit; `set` on the object's handle changes it
/// and emits `PropertiesChanged`.
public struct DBusProperty: Sendable {
    public enum Access: Sendable { case read, readWrite }
    /// Called (on the connection's thread, so it must be quick) before a remote `Set` is accepted; throwing
    /// refuses the change with that error.
    public typealias SetHandler = @Sendable (DBusValue) throws -> Void

    public var value: DBusValue
    public var access: Access
    public var onSet: SetHandler?

    public init(_ value: DBusValue, access: Access = .read, onSet: SetHandler? = nil) {
        self.value = value
        self.access = access
        self.onSet = onSet
    }
}
