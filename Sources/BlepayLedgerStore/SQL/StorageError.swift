/// A failure of the database itself, not a refusal by the ledger's rules.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The database cannot be opened or reached, or a statement failed.
        case unavailable = "storage.unavailable"
        /// A row holds what the schema does not allow: the file was changed by something else.
        case corrupt = "storage.corrupt"
        /// The schema is newer than this program.
        case schemaTooNew = "storage.schema-too-new"
        /// The database kept refusing the transaction with serialization conflicts.
        case conflict = "storage.conflict"
        /// The database holds no ledger: its schema was never created there.
        case noLedger = "storage.no-ledger"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    static func corrupt(column: Int, _ value: SQLValue) -> StorageError {
        StorageError(.corrupt, "column \(column) holds \(value)")
    }
}
