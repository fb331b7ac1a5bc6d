import FoundationEssentials
import Glibc

/// Standard output and error without Foundation's `FileHandle`, which would link all of Foundation (and its ICU
/// data) into a program that only prints lines.
enum Output {
    /// Writes all of `bytes`, retrying short and interrupted writes; a closed pipe drops the rest.
    static func write(_ bytes: Data, to fd: CInt) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
