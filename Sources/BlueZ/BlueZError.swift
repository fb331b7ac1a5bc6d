import DBusKit

/// A BlueZ failure with a stable code. Replies named `org.bluez.Error.<Name>` map to the code of that name;
/// the original D-Bus name and message are kept.
public struct BlueZError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // From org.bluez.Error.* (doc/errors.txt in BlueZ 5.66).
        public static let failed = Code(rawValue: "bluez.failed")
        public static let inProgress = Code(rawValue: "bluez.in-progress")
        public static let alreadyConnected = Code(rawValue: "bluez.already-connected")
        public static let alreadyExists = Code(rawValue: "bluez.already-exists")
        public static let notReady = Code(rawValue: "bluez.not-ready")
        public static let notConnected = Code(rawValue: "bluez.not-connected")
        public static let notPermitted = Code(rawValue: "bluez.not-permitted")
        public static let notAuthorized = Code(rawValue: "bluez.not-authorized")
        public static let notSupported = Code(rawValue: "bluez.not-supported")
        public static let notAvailable = Code(rawValue: "bluez.not-available")
        public static let doesNotExist = Code(rawValue: "bluez.does-not-exist")
        public static let invalidArguments = Code(rawValue: "bluez.invalid-arguments")
        public static let invalidValueLength = Code(rawValue: "bluez.invalid-value-length")
        public static let invalidOffset = Code(rawValue: "bluez.invalid-offset")
        public static let authenticationFailed = Code(rawValue: "bluez.authentication-failed")
        public static let connectionAttemptFailed = Code(rawValue: "bluez.connection-attempt-failed")
        /// Another `org.bluez.Error.*` name, kept in `dbusName`.
        public static let other = Code(rawValue: "bluez.other")
        // Our own.
        /// The adapter, device, service or characteristic asked for does not exist.
        public static let notFound = Code(rawValue: "bluez.not-found")
        /// The operation did not complete in time.
        public static let timeout = Code(rawValue: "bluez.timeout")
        /// bluetoothd is not running, or the bus failed.
        public static let unavailable = Code(rawValue: "bluez.unavailable")
        /// The caller gave the call up (its task was cancelled): it says nothing of bluetoothd.
        public static let cancelled = Code(rawValue: "bluez.cancelled")
        /// bluetoothd sent something we did not expect.
        public static let unexpectedReply = Code(rawValue: "bluez.unexpected-reply")
    }

    public let code: Code
    public let message: String
    /// The D-Bus error name this came from, if any.
    public let dbusName: String?

    public init(_ code: Code, _ message: String, dbusName: String? = nil) {
        self.code = code
        self.message = message
        self.dbusName = dbusName
    }

    static let namePrefix = "org.bluez.Error."

    private static let codesByName: [String: Code] = [
        "Failed": .failed, "InProgress": .inProgress, "AlreadyConnected": .alreadyConnected,
        "AlreadyExists": .alreadyExists, "NotReady": .notReady, "NotConnected": .notConnected,
        "NotPermitted": .notPermitted, "NotAuthorized": .notAuthorized, "NotSupported": .notSupported,
        "NotAvailable": .notAvailable, "DoesNotExist": .doesNotExist, "InvalidArguments": .invalidArguments,
        "InvalidValueLength": .invalidValueLength, "InvalidOffset": .invalidOffset,
        "AuthenticationFailed": .authenticationFailed, "ConnectionAttemptFailed": .connectionAttemptFailed,
    ]

    /// Maps a DBusKit error: `org.bluez.Error.*` names to their codes, a missing bluetoothd to `unavailable`, a call
    /// its caller gave up to `cancelled`.
    public init(_ error: DBusError) {
        dbusName = error.name
        message = error.message
        if let name = error.name, name.hasPrefix(Self.namePrefix) {
            code = Self.codesByName[String(name.dropFirst(Self.namePrefix.count))] ?? .other
            return
        }
        switch (error.code, error.name) {
        case (.timeout, _): code = .timeout
        case (.cancelled, _): code = .cancelled
        case (_, "org.freedesktop.DBus.Error.UnknownObject"), (_, "org.freedesktop.DBus.Error.UnknownMethod"):
            code = .notFound
        case (.typeMismatch, _): code = .unexpectedReply
        default: code = .unavailable
        }
    }

    /// The D-Bus error to reply with when a local GATT or advertisement handler fails.
    var asReply: DBusError {
        let name = dbusName?.hasPrefix(Self.namePrefix) == true
            ? dbusName!
            : Self.namePrefix + (Self.codesByName.first { $0.value == code }?.key ?? "Failed")
        return .reply(name: name, message)
    }

    public var description: String { "\(code): \(message)" }
}

/// Runs `operation`, mapping DBusKit errors to BlueZ errors.
@inline(__always)
func bluez<T>(_ operation: () async throws(DBusError) -> T) async throws(BlueZError) -> T {
    do { return try await operation() } catch { throw BlueZError(error) }
}
