import BlepayConfiguration
import Foundation

/// Idempotency keys kept on disk, one file per logical operation (e.g. `accept-<payment id>-<acceptance>`): the key is written
/// and synced (with its directory entry: a key lost to a power cut would have the retry sent under a new one) before
/// the request is first sent, so a retry after a crash or restart reuses it and the ledger
/// answers with the first outcome instead of executing again. Forgotten once the outcome is final.
public struct IdempotencyKeyStore: Sendable {
    public let directory: String

    public init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        self.directory = directory
    }

    /// The key of `operation`: the stored one, or a new one stored first.
    public func key(for operation: String) throws -> String {
        let path = self.path(operation)
        if let data = FileManager.default.contents(atPath: path) { return String(decoding: data, as: UTF8.self) }
        let key = UUID().uuidString.lowercased()
        // Written whole to a temporary file and renamed, so a crash never leaves half a key behind.
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: temporary)
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary]) }
        try handle.synchronize()
        try handle.close()
        guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
        try DurableFile.syncDirectory(containing: path)
        return key
    }

    /// The outcome of `operation` is final; its key is no longer needed.
    public func forget(_ operation: String) {
        try? FileManager.default.removeItem(atPath: path(operation))
    }

    private func path(_ operation: String) -> String {
        let safe = operation.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        return (directory as NSString).appendingPathComponent(String(safe))
    }
}
