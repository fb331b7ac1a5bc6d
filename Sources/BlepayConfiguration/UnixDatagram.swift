import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// One datagram to a Unix socket by path, as systemd's notify socket and the journal take them.
public enum UnixDatagram {
    /// Sends `bytes` to the socket at `path` (a leading `@` names an abstract socket); false if it was not taken
    /// whole (no socket there, or too large).
    @discardableResult
    public static func send(_ bytes: [UInt8], to path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract socket's address starts with a NUL byte.
        var name = Array(path.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }
        guard name.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent == bytes.count
    }
}
