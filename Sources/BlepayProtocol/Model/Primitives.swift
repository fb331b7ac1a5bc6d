/// A payment's identifier: 16 random bytes chosen by the business. It is also the ledger's idempotency key, so a
/// payment is executed at most once however often it is sent.
public struct PaymentID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Byte order, so that machines act on several payments in a stable order.
    public static func < (lhs: PaymentID, rhs: PaymentID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    public init(bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count == 16 else { throw ProtocolError(.invalidLength, "a payment id is 16 bytes, not \(bytes.count)") }
        self.bytes = bytes
    }

    public static func random() -> PaymentID {
        var generator = SystemRandomNumberGenerator()
        return PaymentID(unchecked: (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Lowercase hex, as the ledger API spells it.
    public var description: String { bytes.hex }
}

/// Milliseconds since 1970-01-01T00:00:00Z. Peers' clocks differ: the spec bounds how far they may.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let millisecondsSince1970: UInt64

    public init(millisecondsSince1970: UInt64) { self.millisecondsSince1970 = millisecondsSince1970 }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    public func adding(milliseconds: UInt64) -> Timestamp {
        Timestamp(millisecondsSince1970: millisecondsSince1970 &+ milliseconds)
    }

    public var description: String { "\(millisecondsSince1970) ms" }
}

/// Text as the protocol carries it: valid UTF-8 (guaranteed by `String`), 1 to `limit` Unicode scalars, no
/// control characters, so that a peer cannot spoof or break the customer's display.
public enum Text {
    public static func validate(_ text: String, field: String, limit: Int) throws(ProtocolError) -> String {
        var count = 0
        for scalar in text.unicodeScalars {
            // General category Cc is exactly U+0000–U+001F and U+007F–U+009F, and Unicode guarantees it never
            // changes: a range check instead of a property look-up per character.
            guard scalar.value >= 0x20, !(0x7F...0x9F).contains(scalar.value) else {
                throw ProtocolError(.invalidValue, "\(field) contains a control character")
            }
            count += 1
        }
        guard count > 0 else { throw ProtocolError(.invalidValue, "\(field) is empty") }
        guard count <= limit else {
            throw ProtocolError(.stringTooLong, "\(field) has \(count) characters, at most \(limit) allowed")
        }
        return text
    }

    /// A name shown to a payer (a merchant's): as `validate`, and without invisible formatting characters (general
    /// category Cf: bidi embeddings, overrides and isolates, zero-width spaces and joiners, the word joiner, the byte
    /// order mark, the soft hyphen), with which one name can be made to look like another, or to reorder what is
    /// shown around it.
    public static func validateName(_ text: String, field: String, limit: Int) throws(ProtocolError) -> String {
        let text = try validate(text, field: field, limit: limit)
        if let hidden = text.unicodeScalars.first(where: { $0.properties.generalCategory == .format }) {
            let code = String(hidden.value, radix: 16, uppercase: true)
            throw ProtocolError(.invalidValue, "\(field) contains the invisible character U+\(code)")
        }
        return text
    }

    /// Identifiers (merchant and instrument ids): 1 to 64 of `A-Z a-z 0-9 . _ : -`.
    public static func validateIdentifier(_ text: String, field: String) throws(ProtocolError) -> String {
        guard (1...64).contains(text.utf8.count),
            text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x3A) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A)
                || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
        else { throw ProtocolError(.invalidValue, "\(field) must be 1 to 64 of A-Z a-z 0-9 . _ : -") }
        return text
    }
}

/// Fixed-size byte strings: keys, hashes, signatures.
public struct FixedBytes<Size: FixedByteCount>: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count == Size.count else {
            throw ProtocolError(.invalidLength, "\(Size.name) is \(Size.count) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    public var description: String { bytes.hex }
}

public protocol FixedByteCount: Sendable, Hashable {
    static var count: Int { get }
    static var name: String { get }
}

public enum Bytes32: FixedByteCount {
    public static let count = 32
    public static let name = "a key or hash"
}

public enum Bytes64: FixedByteCount {
    public static let count = 64
    public static let name = "a signature"
}

public enum Bytes8: FixedByteCount {
    public static let count = 8
    public static let name = "a short identifier"
}

/// An Ed25519 or X25519 public key, or a SHA-256 hash.
public typealias Key32 = FixedBytes<Bytes32>
public typealias Hash32 = FixedBytes<Bytes32>
/// An Ed25519 signature.
public typealias Signature64 = FixedBytes<Bytes64>

extension FixedBytes where Size == Bytes64 {
    /// What a signed structure carries before it is signed: build it with this, then call its `signed(by:)`.
    public static var unsigned: Signature64 { try! Signature64(Array(repeating: 0, count: 64)) }
}

extension Sequence<UInt8> {
    /// Lowercase hex.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in self { out += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: out, as: UTF8.self)
    }
}
