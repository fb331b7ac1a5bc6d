/// Why the state file could not be used. A daemon that meets one at start exits with code 78, naming the file.
public struct DaemonStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The file cannot be opened, read or written (permissions, a full disk, not a database).
        case unavailable = "store.unavailable"
        /// The file was written by a newer blepay whose schema this one does not know.
        case newerSchema = "store.newer-schema"
        /// A migration failed; it was rolled back and the file is as it was.
        case migrationFailed = "store.migration-failed"
        /// A history query's cursor or filter cannot be read (a cursor from elsewhere, a limit out of range).
        case invalidQuery = "store.invalid-query"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
