import BlepayConfiguration
import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Idempotency keys kept on disk, one file per logical operation (e.g. `accept-<payment id>-<acceptance>`): the key is
/// written whole and synced with its directory entry (a `SecretFile`) before the request is first sent, so a retry
/// after a crash or restart reuses it and the ledger answers with the first outcome instead of executing again.
/// Forgotten once the outcome is final. The business asks for two a payment, so this is system calls only.
public struct IdempotencyKeyStore: Sendable {
    public let directory: String

    public init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        self.directory = directory
    }

    /// The key of `operation`: the stored one, or a new one stored first. Of two callers asking at once for a key
    /// not yet stored, the first to store its key wins and the other gets that one.
    public func key(for operation: String) throws -> String {
        let bytes = try SecretFile.loadOrCreate(path(operation)) { Array(UUID().uuidString.lowercased().utf8) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The outcome of `operation` is final; its key is no longer needed.
    public func forget(_ operation: String) {
        unlink(path(operation))
    }

    private func path(_ operation: String) -> String {
        let safe = operation.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        return directory + "/" + String(safe)
    }
}
