/// Writes fields in blepay's canonical TLV form (`docs/protocol.md`, Encoding): tag byte, minimal LEB128 length,
/// value; callers write tags in ascending order.
struct FieldWriter {
    private(set) var bytes: [UInt8] = []

    init(reservingCapacity capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    static func varint(_ value: UInt64, into out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    mutating func bytes(_ tag: UInt8, _ value: [UInt8]) {
        bytes.append(tag)
        Self.varint(UInt64(value.count), into: &bytes)
        bytes += value
    }

    mutating func uint(_ tag: UInt8, _ value: UInt64) {
        bytes.append(tag)
        // The length of a varint is its number of 7-bit groups (always below 128, so one length byte).
        bytes.append(UInt8(max(1, (64 - value.leadingZeroBitCount + 6) / 7)))
        Self.varint(value, into: &bytes)
    }

    mutating func bool(_ tag: UInt8, _ value: Bool) { bytes(tag, [value ? 1 : 0]) }

    mutating func string(_ tag: UInt8, _ value: String) {
        bytes.append(tag)
        Self.varint(UInt64(value.utf8.count), into: &bytes)
        bytes.append(contentsOf: value.utf8)
    }

    mutating func nested<T: FieldCodable>(_ tag: UInt8, _ value: T) {
        var inner = FieldWriter()
        value.encodeFields(into: &inner)
        bytes(tag, inner.bytes)
    }

    /// Amount and currency as two fields: the amount at `tag`, the currency (3 ASCII letters and the exponent)
    /// at `tag + 1`.
    mutating func money(_ tag: UInt8, _ value: Money) {
        uint(tag, value.minorUnits)
        bytes += [tag + 1, 4]
        bytes.append(contentsOf: value.currency.code.utf8)
        bytes.append(value.currency.exponent)
    }

    // Optionals are absent when nil.
    mutating func bytes(_ tag: UInt8, _ value: [UInt8]?) { if let value { bytes(tag, value) } }
    mutating func string(_ tag: UInt8, _ value: String?) { if let value { string(tag, value) } }
    mutating func nested<T: FieldCodable>(_ tag: UInt8, _ value: T?) { if let value { nested(tag, value) } }
}
