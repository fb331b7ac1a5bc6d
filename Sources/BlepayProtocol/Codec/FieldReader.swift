/// Reads a run of canonical TLV fields, checking everything before a value is used: lengths against the input,
/// strictly ascending tags, minimal varints. Getters consume fields; `finish` then applies the rule for the fields
/// nobody asked for (unknown to this version).
struct FieldReader {
    private let input: ArraySlice<UInt8>
    private var fields: [(tag: UInt8, value: Range<Int>)] = []
    private var consumed: UInt64 = 0  // bit per position in `fields`; at most 64 fields are accepted

    static let maximumFields = 64

    init(_ input: ArraySlice<UInt8>) throws(ProtocolError) {
        self.input = input
        fields.reserveCapacity(16)  // every message has fewer; one allocation instead of several as it grows
        var index = input.startIndex
        var lastTag: Int = -1
        while index < input.endIndex {
            let tag = input[index]
            index += 1
            guard Int(tag) > lastTag else { throw ProtocolError(.nonCanonical, "field \(tag) out of order or repeated") }
            lastTag = Int(tag)
            let length = try Self.varint(input, at: &index)
            guard length <= UInt64(input.endIndex - index) else {
                throw ProtocolError(.truncated, "field \(tag) claims \(length) bytes, \(input.endIndex - index) left")
            }
            guard fields.count < Self.maximumFields else { throw ProtocolError(.invalidValue, "more than 64 fields") }
            fields.append((tag, index..<index + Int(length)))
            index += Int(length)
        }
    }

    /// Decodes a minimal LEB128 varint of at most 64 bits at `index`.
    static func varint(_ input: ArraySlice<UInt8>, at index: inout Int) throws(ProtocolError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < input.endIndex else { throw ProtocolError(.truncated, "varint cut short") }
            let byte = input[index]
            index += 1
            guard shift < 64, shift < 63 || byte <= 1 else { throw ProtocolError(.invalidValue, "varint exceeds 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                guard byte != 0 || shift == 0 else { throw ProtocolError(.nonCanonical, "varint not in its shortest form") }
                return value
            }
            shift += 7
        }
    }

    // MARK: Getters: `optional*` return nil when the field is absent; the others throw `missingField`.

    mutating func optionalBytes(_ tag: UInt8) -> ArraySlice<UInt8>? {
        guard let position = fields.firstIndex(where: { $0.tag == tag }) else { return nil }
        consumed |= 1 << UInt64(position)
        return input[fields[position].value]
    }

    mutating func bytes(_ tag: UInt8, _ name: String) throws(ProtocolError) -> ArraySlice<UInt8> {
        guard let value = optionalBytes(tag) else { throw ProtocolError(.missingField, "\(name) (field \(tag)) is missing") }
        return value
    }

    mutating func fixed<Size>(_ tag: UInt8, _ name: String) throws(ProtocolError) -> FixedBytes<Size> {
        try FixedBytes<Size>(Array(bytes(tag, name)))
    }

    mutating func optionalFixed<Size>(_ tag: UInt8) throws(ProtocolError) -> FixedBytes<Size>? {
        guard let value = optionalBytes(tag) else { return nil }
        return try FixedBytes<Size>(Array(value))
    }

    mutating func paymentID(_ tag: UInt8) throws(ProtocolError) -> PaymentID {
        try PaymentID(bytes: Array(bytes(tag, "payment id")))
    }

    mutating func optionalUInt(_ tag: UInt8) throws(ProtocolError) -> UInt64? {
        guard let value = optionalBytes(tag) else { return nil }
        var index = value.startIndex
        let decoded = try Self.varint(value, at: &index)
        guard index == value.endIndex else { throw ProtocolError(.invalidLength, "field \(tag) has bytes after its varint") }
        return decoded
    }

    mutating func uint(_ tag: UInt8, _ name: String) throws(ProtocolError) -> UInt64 {
        guard let value = try optionalUInt(tag) else { throw ProtocolError(.missingField, "\(name) (field \(tag)) is missing") }
        return value
    }

    mutating func uint<T: FixedWidthInteger & UnsignedInteger>(_ tag: UInt8, _ name: String, as: T.Type)
        throws(ProtocolError) -> T
    {
        guard let value = T(exactly: try uint(tag, name)) else { throw ProtocolError(.invalidValue, "\(name) is out of range") }
        return value
    }

    mutating func timestamp(_ tag: UInt8, _ name: String) throws(ProtocolError) -> Timestamp {
        Timestamp(millisecondsSince1970: try uint(tag, name))
    }

    mutating func bool(_ tag: UInt8, _ name: String) throws(ProtocolError) -> Bool {
        let value = try bytes(tag, name)
        guard value.count == 1, value.first! <= 1 else { throw ProtocolError(.invalidValue, "\(name) is not a boolean") }
        return value.first! == 1
    }

    mutating func optionalString(_ tag: UInt8, _ name: String, limit: Int) throws(ProtocolError) -> String? {
        guard let value = optionalBytes(tag) else { return nil }
        // A scalar takes at most 4 bytes: reject before decoding anything longer than the limit allows.
        guard value.count <= limit * 4 else { throw ProtocolError(.stringTooLong, "\(name) is \(value.count) bytes") }
        guard let string = String(validating: value, as: UTF8.self) else {
            throw ProtocolError(.invalidUTF8, "\(name) is not valid UTF-8")
        }
        return string
    }

    mutating func string(_ tag: UInt8, _ name: String, limit: Int) throws(ProtocolError) -> String {
        guard let value = try optionalString(tag, name, limit: limit) else {
            throw ProtocolError(.missingField, "\(name) (field \(tag)) is missing")
        }
        return value
    }

    mutating func money(_ tag: UInt8, _ name: String) throws(ProtocolError) -> Money {
        let amount = try uint(tag, name)
        return try Money(minorUnits: amount, currency: currency(tag + 1))
    }

    mutating func currency(_ tag: UInt8) throws(ProtocolError) -> Currency {
        let value = try bytes(tag, "currency")
        guard value.count == 4, value.prefix(3).allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw ProtocolError(.invalidCurrency, "a currency is 3 capital letters and an exponent")
        }
        return try Currency(code: String(decoding: value.prefix(3), as: UTF8.self), exponent: value.last!)
    }

    mutating func nested<T: FieldCodable>(_ tag: UInt8, _ name: String) throws(ProtocolError) -> T {
        guard let value: T = try optionalNested(tag) else {
            throw ProtocolError(.missingField, "\(name) (field \(tag)) is missing")
        }
        return value
    }

    mutating func optionalNested<T: FieldCodable>(_ tag: UInt8) throws(ProtocolError) -> T? {
        guard let value = optionalBytes(tag) else { return nil }
        var inner = try FieldReader(value)
        let decoded = try T(fields: &inner)
        try inner.finish(signed: T.isSigned)
        return decoded
    }

    /// Applies the unknown-field rule: in a signed structure every field must be known (the signature must cover
    /// exactly what the receiver understood); elsewhere unknown odd tags are skipped and unknown even tags rejected.
    func finish(signed: Bool) throws(ProtocolError) {
        for (position, field) in fields.enumerated() where consumed & (1 << UInt64(position)) == 0 {
            if signed || field.tag % 2 == 0 {
                throw ProtocolError(.unknownRequiredField, "field \(field.tag) is unknown to protocol version 1")
            }
        }
    }
}

/// A structure encoded as a run of fields.
protocol FieldCodable {
    /// Signed structures reject unknown fields.
    static var isSigned: Bool { get }
    func encodeFields(into writer: inout FieldWriter)
    init(fields: inout FieldReader) throws(ProtocolError)
}
