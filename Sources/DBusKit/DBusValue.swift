import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// One D-Bus value of any type BlueZ uses. Arrays carry their element signature so that empty arrays
/// keep their type; `ay` has its own fast case, `bytes`.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusUnixFD)
    /// `ay`, marshalled as one fixed array.
    case bytes([UInt8])
    case array(element: DBusSignature, [DBusValue])
    case dictionary(key: DBusSignature, value: DBusSignature, [DBusDictEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's D-Bus signature, e.g. `a{sv}`.
    public var signature: DBusSignature {
        DBusSignature(unchecked: signatureString)
    }

    var signatureString: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .bytes: "ay"
        case .array(let element, _): "a" + element.rawValue
        case .dictionary(let key, let value, _): "a{" + key.rawValue + value.rawValue + "}"
        case .structure(let fields): "(" + fields.map(\.signatureString).joined() + ")"
        case .variant: "v"
        }
    }
}

/// One entry of a D-Bus dictionary (`a{kv}`).
public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

extension DBusValue {
    /// An `a{sv}` dictionary (BlueZ's options and property maps), keys in sorted order.
    public static func stringDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v",
            entries.sorted { $0.key < $1.key }.map { DBusDictEntry(key: .string($0.key), value: .variant($0.value)) }
        )
    }

    /// An `as` array.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map(DBusValue.string))
    }

    /// The string inside a `s`, `o` or `g` value; empty for any other type.
    var stringValue: String { (try? String(dbus: self)) ?? "" }

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }
}

/// A valid D-Bus object path such as `/org/bluez/hci0`.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Validates `rawValue` with libdbus's own rules.
    public init(_ rawValue: String) throws(DBusError) {
        guard dbus_validate_path(rawValue, nil) != 0 else {
            throw DBusError(.invalidValue, "invalid object path '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    init(unchecked rawValue: String) { self.rawValue = rawValue }

    /// A literal path; an invalid literal is a programming error.
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("\(error)") }
    }

    public static let root = DBusObjectPath(unchecked: "/")

    /// `self` followed by one more element, e.g. `/pay` + `s0` = `/pay/s0`.
    public func appending(_ element: String) throws(DBusError) -> DBusObjectPath {
        try DBusObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` lies strictly below `ancestor`.
    public func isDescendant(of ancestor: DBusObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// A valid D-Bus type signature, possibly of several complete types (e.g. `oa{sv}`).
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) throws(DBusError) {
        guard dbus_signature_validate(rawValue, nil) != 0 else {
            throw DBusError(.invalidValue, "invalid signature '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    init(unchecked rawValue: String) { self.rawValue = rawValue }

    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { preconditionFailure("\(error)") }
    }

    public var description: String { rawValue }
}

/// A Unix file descriptor received or to be sent over D-Bus. It owns `rawValue` and closes it when released;
/// sending duplicates it.
public final class DBusUnixFD: Sendable, Hashable {
    public let rawValue: CInt

    /// Takes ownership of `fd`.
    public init(owning fd: CInt) { self.rawValue = fd }

    deinit { _ = close(rawValue) }

    /// A new descriptor for the same open file, owned by the caller.
    public func duplicate() throws(DBusError) -> CInt {
        let fd = dup(rawValue)
        guard fd >= 0 else { throw DBusError(.invalidValue, "dup failed: errno \(errno)") }
        return fd
    }

    public static func == (lhs: DBusUnixFD, rhs: DBusUnixFD) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
