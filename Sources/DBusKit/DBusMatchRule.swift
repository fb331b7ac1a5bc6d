/// Selects signals, as a D-Bus match rule does. The bus delivers the union of every rule a connection
/// added, so each subscription also checks its own rule locally and receives exactly what it matches.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
    /// A unique (`:1.42`) or well-known (`org.bluez`) name; a well-known name matches whoever owns it.
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: DBusObjectPath?
    /// Matches this path and every path below it.
    public var pathNamespace: DBusObjectPath?
    public var destination: String?
    /// String arguments that must be equal, by index (`argN`; the bus compares no other type).
    public var arguments: [Int: String]
    /// Path arguments (`argNpath`), by index: an argument matches when it equals the path, or when one of the two
    /// ends with `/` and is a prefix of the other; `/org/bluez/hci0/` matches everything below `hci0`.
    public var argumentPaths: [Int: String]

    public init(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: DBusObjectPath? = nil,
        pathNamespace: DBusObjectPath? = nil, destination: String? = nil, arguments: [Int: String] = [:],
        argumentPaths: [Int: String] = [:]
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
        self.argumentPaths = argumentPaths
    }

    /// The rule in the bus's syntax, with values quoted as the specification requires.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            parts.append("\(key)=\(Self.quote(value))")
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("destination", destination)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
        for (index, value) in argumentPaths.sorted(by: { $0.key < $1.key }) { add("arg\(index)path", value) }
        return parts.joined(separator: ",")
    }

    /// Whether a signal matches, given the current owner of `sender` when it is a well-known name.
    func matches(_ message: DBusMessage, senderOwner: String?) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, message.sender != sender, message.sender != senderOwner { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let p = message.path, p == pathNamespace || p.isDescendant(of: pathNamespace) else { return false }
        }
        if let destination, message.destination != destination { return false }
        for (index, expected) in arguments {
            guard index < message.arguments.count else { return false }
            guard case .string(expected) = message.arguments[index] else { return false }
        }
        for (index, expected) in argumentPaths {
            guard index < message.arguments.count else { return false }
            let value: String
            switch message.arguments[index] {
            case .string(let s): value = s
            case .objectPath(let p): value = p.rawValue
            default: return false
            }
            guard Self.pathMatches(value, expected) else { return false }
        }
        return true
    }

    /// `argNpath` as the specification has it.
    private static func pathMatches(_ value: String, _ expected: String) -> Bool {
        value == expected || (expected.hasSuffix("/") && value.hasPrefix(expected))
            || (value.hasSuffix("/") && expected.hasPrefix(value))
    }

    /// Whether `sender` is a well-known name whose owner must be tracked to match locally.
    var wellKnownSender: String? {
        guard let sender, !sender.hasPrefix(":"), sender != "org.freedesktop.DBus" else { return nil }
        return sender
    }

    /// Single quotes cannot be escaped inside quotes: close the quote, add `\'`, reopen.
    private static func quote(_ value: String) -> String {
        "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
