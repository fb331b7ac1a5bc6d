import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// What makes a file that was just created or renamed survive a power loss: its directory's entry synced too.
public enum DurableFile {
    public static func syncDirectory(containing path: String) throws(SecretFile.Failure) {
        let directory = parent(of: path)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SecretFile.Failure(path: directory, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SecretFile.Failure(path: directory, reason: "cannot be synced") }
    }

    /// The directory a path names its entry in: "." for a bare name, "/" for a top-level entry.
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
