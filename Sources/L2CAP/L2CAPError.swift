#if canImport(Glibc)
    import Glibc
#endif

/// An L2CAP failure with a stable code, and the errno behind it when there is one.
public struct L2CAPError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The kernel has no Bluetooth sockets (EAFNOSUPPORT), or no such adapter.
        case unavailable = "l2cap.unavailable"
        /// An address or PSM that cannot be used.
        case invalidArgument = "l2cap.invalid-argument"
        /// Binding or listening failed.
        case listenFailed = "l2cap.listen-failed"
        /// The peer refused the channel, or the connection failed.
        case connectFailed = "l2cap.connect-failed"
        /// The channel did not open in time.
        case timeout = "l2cap.timeout"
        /// The channel or listener is closed (by either end).
        case closed = "l2cap.closed"
        /// An SDU longer than the peer takes (the send MTU), or empty.
        case sduTooLarge = "l2cap.sdu-too-large"
        /// Sending failed on an open channel.
        case sendFailed = "l2cap.send-failed"
    }

    public let code: Code
    public let message: String
    /// The errno of the failing call, if one failed.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// A failed system call: the current errno, and `unavailable` when the kernel has no Bluetooth.
    static func system(_ code: Code, _ call: String) -> L2CAPError {
        let number = Glibc.errno
        let unsupported = number == EAFNOSUPPORT || number == EPROTONOSUPPORT || number == ENODEV
        return L2CAPError(
            unsupported ? .unavailable : code, "\(call): \(String(cString: strerror(number)))", errno: number)
    }

    public var description: String {
        errno.map { "\(code.rawValue): \(message) (errno \($0))" } ?? "\(code.rawValue): \(message)"
    }
}
