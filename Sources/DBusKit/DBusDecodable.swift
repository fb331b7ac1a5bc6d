/// A Swift type that can be read from a `DBusValue`. Variants are unwrapped first, so a property read as
/// `<s>` decodes as `String`. A value of another type throws `typeMismatch`, never traps.
public protocol DBusDecodable: Sendable {
    init(dbus value: DBusValue) throws(DBusError)
}

extension DBusValue {
    /// Decodes `self` (variants unwrapped) as `T`.
    public func decode<T: DBusDecodable>(_ type: T.Type = T.self) throws(DBusError) -> T {
        try T(dbus: self)
    }
}

extension DBusValue: DBusDecodable {
    public init(dbus value: DBusValue) { self = value }
}

private func mismatch(_ expected: String, _ value: DBusValue) -> DBusError {
    .typeMismatch(expected: expected, actual: value.signatureString)
}

extension String: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        switch value.unwrapped {
        case .string(let s): self = s
        case .objectPath(let p): self = p.rawValue
        case .signature(let g): self = g.rawValue
        default: throw mismatch("s", value)
        }
    }
}

extension DBusObjectPath: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case .objectPath(let p) = value.unwrapped else { throw mismatch("o", value) }
        self = p
    }
}

extension Bool: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case .boolean(let b) = value.unwrapped else { throw mismatch("b", value) }
        self = b
    }
}

extension Double: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case .double(let d) = value.unwrapped else { throw mismatch("d", value) }
        self = d
    }
}

/// Integers decode from any integer type whose value fits, as D-Bus peers differ in the width they send.
extension DBusDecodable where Self: FixedWidthInteger {
    public init(dbus value: DBusValue) throws(DBusError) {
        let result: Self?
        switch value.unwrapped {
        case .byte(let v): result = Self(exactly: v)
        case .int16(let v): result = Self(exactly: v)
        case .uint16(let v): result = Self(exactly: v)
        case .int32(let v): result = Self(exactly: v)
        case .uint32(let v): result = Self(exactly: v)
        case .int64(let v): result = Self(exactly: v)
        case .uint64(let v): result = Self(exactly: v)
        default: result = nil
        }
        guard let result else { throw mismatch("\(Self.self)", value) }
        self = result
    }
}

extension UInt8: DBusDecodable {}
extension Int16: DBusDecodable {}
extension UInt16: DBusDecodable {}
extension Int32: DBusDecodable {}
extension UInt32: DBusDecodable {}
extension Int64: DBusDecodable {}
extension UInt64: DBusDecodable {}
extension Int: DBusDecodable {}

extension Array: DBusDecodable where Element: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        switch value.unwrapped {
        case .bytes(let bytes):
            self = try bytes.map { (b) throws(DBusError) in try Element(dbus: .byte(b)) }
        case .array(_, let elements):
            self = try elements.map { (e) throws(DBusError) in try Element(dbus: e) }
        default:
            throw mismatch("a", value)
        }
    }
}

extension Dictionary: DBusDecodable where Key: DBusDecodable, Value: DBusDecodable {
    public init(dbus value: DBusValue) throws(DBusError) {
        guard case .dictionary(_, _, let entries) = value.unwrapped else { throw mismatch("a{..}", value) }
        var result: [Key: Value] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            result[try Key(dbus: entry.key)] = try Value(dbus: entry.value)
        }
        self = result
    }
}
