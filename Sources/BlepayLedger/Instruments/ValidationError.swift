/// Invalid input, field by field, so that a client can point at what to fix. Codes are stable.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Field: Sendable, Hashable, Codable {
        /// The field's path in the request, e.g. `card.number`.
        public let path: String
        /// Stable code, e.g. `invalid-checksum`.
        public let code: String
        public let message: String

        public init(path: String, code: String, message: String) {
            self.path = path
            self.code = code
            self.message = message
        }
    }

    public let fields: [Field]

    public init(_ fields: [Field]) { self.fields = fields }

    public var description: String { fields.map { "\($0.path): \($0.code)" }.joined(separator: ", ") }
}

/// Collects field errors while a structure is checked, then throws them all at once.
struct FieldChecker {
    let prefix: String
    private(set) var fields: [ValidationError.Field] = []

    init(_ prefix: String) { self.prefix = prefix }

    mutating func require(_ condition: Bool, _ field: String, _ code: String, _ message: String) {
        if !condition { fields.append(.init(path: "\(prefix).\(field)", code: code, message: message)) }
    }

    func finish() throws(ValidationError) {
        if !fields.isEmpty { throw ValidationError(fields) }
    }
}

extension String {
    /// Only ASCII digits, at least one.
    var isDigits: Bool { !isEmpty && utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }

    var digitValues: [Int] { utf8.map { Int($0) - 0x30 } }
}
