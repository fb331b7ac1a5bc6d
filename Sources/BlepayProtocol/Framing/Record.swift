/// A reassembled unit of the session: a type byte and a body (`docs/protocol.md`, Records).
public struct Record: Sendable, Hashable {
    public enum Kind: UInt8, Sendable, CaseIterable {
        /// Noise XX message 1 (business → customer): `e`, and the Offer in the clear.
        case handshake1 = 1
        /// Noise XX message 2 (customer → business): `e, ee, s, es`, and the encrypted Choice.
        case handshake2 = 2
        /// Noise XX message 3 (business → customer): `s, se`, and the encrypted Credentials.
        case handshake3 = 3
        /// A Noise transport message: an encrypted `Message`.
        case transport = 4
        /// An unencrypted `ErrorMessage`, only before the handshake completes (e.g. no common version).
        case plaintextError = 5
    }

    public let kind: Kind
    public let body: [UInt8]

    public init(kind: Kind, body: [UInt8]) {
        self.kind = kind
        self.body = body
    }

    public var encoded: [UInt8] { [kind.rawValue] + body }

    public init(encoded bytes: [UInt8]) throws(ProtocolError) {
        guard let first = bytes.first else { throw ProtocolError(.truncated, "an empty record") }
        guard let kind = Kind(rawValue: first) else { throw ProtocolError(.unknownMessageType, "record type \(first)") }
        guard bytes.count <= Framing.maximumRecordSize else {
            throw ProtocolError(.messageTooLarge, "a record is at most \(Framing.maximumRecordSize) bytes")
        }
        self.init(kind: kind, body: Array(bytes[1...]))
    }
}
