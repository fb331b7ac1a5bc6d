import Glibc
import NIOCore
import NIOPosix

/// Tells when a file in a directory is replaced, written and closed, or removed: inotify, read on an event loop, so
/// that waiting for a change costs no timer and no thread.
enum FileChanges {
    /// Calls `changed` with the name of each file in `directory` that changed, until the task is cancelled. Throws
    /// if the directory cannot be watched (no inotify, or its limits reached).
    static func watch(_ directory: String, _ changed: (String) async -> Void) async throws {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "inotify_init1") }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_CREATE)
        guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
            let code = errno
            close(descriptor)
            throw IOError(errnoCode: code, reason: "inotify_add_watch \(directory)")
        }
        let events = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .takingOwnershipOfDescriptor(input: descriptor) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
                }
            }
        try await events.executeThenClose { inbound in
            for try await var buffer in inbound {
                for name in Self.names(in: &buffer) { await changed(name) }
            }
        }
    }

    /// The file names in a read of whole `inotify_event`s: a 16-byte head (watch, mask, cookie, name length), then
    /// the name padded with NULs.
    static func names(in buffer: inout ByteBuffer) -> [String] {
        var names: [String] = []
        while buffer.readableBytes >= 16, let length = buffer.getInteger(at: buffer.readerIndex + 12, endianness: .host, as: UInt32.self),
            buffer.readableBytes >= 16 + Int(length)
        {
            buffer.moveReaderIndex(forwardBy: 16)
            let bytes = buffer.readBytes(length: Int(length)) ?? []
            names.append(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self))
        }
        return names
    }
}
