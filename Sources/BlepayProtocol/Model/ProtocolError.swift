/// A protocol failure with a stable code: malformed frames and messages, failed validation, and failed
/// handshakes, certificates, signatures or decryption. Every such failure ends the message (and, for security
/// failures, the session); none is a crash.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Encoding.
        /// The input ended inside a field, header or message.
        public static let truncated = Code(rawValue: "protocol.truncated")
        /// Bytes left over after a complete message.
        public static let trailingBytes = Code(rawValue: "protocol.trailing-bytes")
        /// A message type this version does not define.
        public static let unknownMessageType = Code(rawValue: "protocol.unknown-message-type")
        /// An unknown field whose tag says it must be understood.
        public static let unknownRequiredField = Code(rawValue: "protocol.unknown-required-field")
        public static let missingField = Code(rawValue: "protocol.missing-field")
        /// Fields out of order, repeated, or a varint or length not in its shortest form.
        public static let nonCanonical = Code(rawValue: "protocol.non-canonical")
        /// A field whose length does not fit its type.
        public static let invalidLength = Code(rawValue: "protocol.invalid-length")
        public static let invalidUTF8 = Code(rawValue: "protocol.invalid-utf8")
        public static let stringTooLong = Code(rawValue: "protocol.string-too-long")
        /// An enum value, flag or other field value outside what the spec allows.
        public static let invalidValue = Code(rawValue: "protocol.invalid-value")
        public static let invalidCurrency = Code(rawValue: "protocol.invalid-currency")
        public static let invalidAmount = Code(rawValue: "protocol.invalid-amount")
        public static let messageTooLarge = Code(rawValue: "protocol.message-too-large")
        // Framing.
        /// A fragment other than the next one expected (a lost or reordered fragment).
        public static let fragmentOutOfOrder = Code(rawValue: "protocol.fragment-out-of-order")
        /// A message's fragments did not all arrive in time.
        public static let reassemblyTimeout = Code(rawValue: "protocol.reassembly-timeout")
        /// The MTU is below the ATT minimum of 23.
        public static let invalidMTU = Code(rawValue: "protocol.invalid-mtu")
        // Session and security.
        public static let unsupportedVersion = Code(rawValue: "protocol.unsupported-version")
        public static let handshakeFailed = Code(rawValue: "protocol.handshake-failed")
        /// The handshake did not complete within 10 s of the connection.
        public static let handshakeTimeout = Code(rawValue: "protocol.handshake-timeout")
        public static let decryptionFailed = Code(rawValue: "protocol.decryption-failed")
        public static let invalidCertificate = Code(rawValue: "protocol.invalid-certificate")
        public static let certificateExpired = Code(rawValue: "protocol.certificate-expired")
        public static let invalidSignature = Code(rawValue: "protocol.invalid-signature")
        /// A message that is valid but not allowed now (e.g. an application message before the handshake).
        public static let unexpectedMessage = Code(rawValue: "protocol.unexpected-message")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
