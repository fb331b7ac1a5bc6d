import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// A secret kept in a file only its owner can read: created on first start (whole or not at all, mode 0600, synced
/// with its directory entry), read on every later one. A file others can read is refused rather than trusted.
public enum SecretFile {
    public struct Failure: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "secret.file: \(path): \(reason)" }
    }

    public static func loadOrCreate(_ path: String, create: () -> [UInt8]) throws -> [UInt8] {
        if let bytes = try contents(path) { return bytes }
        let bytes = create()
        // Written whole under a name of its own, then linked into place: a crash leaves no half-written secret, and
        // of two processes starting together the first link wins and the other reads it.
        let temporary = try writeTemporary(bytes, for: path)
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return try load(path) }
            throw Failure(path: path, reason: String(cString: strerror(errno)))
        }
        try DurableFile.syncDirectory(containing: path)
        return bytes
    }

    /// Replaces the secret with `bytes`: written whole under a name of its own, then renamed over the old one, so
    /// that a crash at any point leaves either the old secret or the new one, never a mix or none.
    public static func replace(_ path: String, with bytes: [UInt8]) throws {
        let temporary = try writeTemporary(bytes, for: path)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(path: path, reason: reason)
        }
        try DurableFile.syncDirectory(containing: path)
    }

    /// `bytes` in a new file beside `path` (mode 0600), synced; its name. The name is unique (mkstemp): creators
    /// racing in one process must not share a file, or one would truncate the secret another just linked into place.
    private static func writeTemporary(_ bytes: [UInt8], for path: String) throws(Failure) -> String {
        var template = Array("\(path).XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let temporary = String(cString: template)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else {
            unlink(temporary)
            throw Failure(path: path, reason: "cannot be written")
        }
        return temporary
    }

    public static func load(_ path: String) throws -> [UInt8] {
        guard let bytes = try contents(path) else { throw Failure(path: path, reason: String(cString: strerror(ENOENT))) }
        return bytes
    }

    /// The file's bytes, or nil if there is no such file. Plain system calls: the daemons' ledger client reads an
    /// idempotency key this way for every call it makes.
    private static func contents(_ path: String) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_mode & 0o077 == 0 else {
            throw Failure(path: path, reason: "is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw Failure(path: path, reason: "cannot be read") }
            filled += count
        }
        return bytes
    }
}
