import CBluetooth
import Foundation
import Synchronization

/// Accepts LE credit-based channels on an adapter's address and an LE PSM. A thread of its own sleeps in poll() on
/// the listening socket and an eventfd, and hands each channel out through `channels` with its peer's address.
public final class L2CAPListener: Sendable {
    /// The PSM peers connect to: the one asked for, or the dynamic one taken.
    public let psm: UInt16
    /// Each accepted channel; finishes when the listener closes. Whoever takes one owns it and closes it.
    public let channels: AsyncStream<L2CAPChannel>

    private let fd: CInt
    private let wakeFD: CInt
    /// Set under the lock by `close` or by the thread as it ends; the eventfd is written only while unset.
    private let closed = Mutex(false)
    private let sink: AsyncStream<L2CAPChannel>.Continuation

    /// Listens on `local` at `psm`, or with `psm` 0 (the default) at a free dynamic LE PSM. Accepted channels take
    /// SDUs of up to `receiveMTU` bytes.
    public init(on local: L2CAPAddress, psm: UInt16 = 0, receiveMTU: Int) throws(L2CAPError) {
        let listening = try Socket.listening(local, psm: psm, receiveMTU: receiveMTU)
        (fd, self.psm) = (listening.fd, listening.psm)
        wakeFD = cbt_wake_fd()
        guard wakeFD >= 0 else {
            let error = L2CAPError.system(.listenFailed, "eventfd")
            Glibc.close(fd)
            throw error
        }
        (channels, sink) = AsyncStream.makeStream()
        Thread { [self] in
            cbt_name_thread("blepay-l2cap-ls")
            run()
        }.start()
    }

    /// Stops accepting; channels already handed out stay open. Idempotent.
    public func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            Socket.wake(wakeFD)
        }
    }

    private func run() {
        while !closed.withLock({ $0 }) {
            var fds = [Socket.pollFD(wakeFD, POLLIN), Socket.pollFD(fd, POLLIN)]
            guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { Socket.drain(wakeFD) }
            if fds[1].revents != 0, !acceptAll() { break }
        }
        closed.withLock { $0 = true }
        sink.finish()
        Glibc.close(fd)
        Glibc.close(wakeFD)
    }

    /// Accepts every channel waiting; false if the listening socket failed.
    private func acceptAll() -> Bool {
        while true {
            var address = [UInt8](repeating: 0, count: 18)
            var type: UInt8 = 0
            let channel = address.withUnsafeMutableBytes { bytes in
                cbt_l2cap_accept(fd, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), &type)
            }
            guard channel >= 0 else {
                // A connection that went away before it was accepted (ECONNABORTED) leaves the listener working.
                return [EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED].contains(errno)
            }
            let kind: L2CAPAddress.Kind = Int32(type) == CBT_BDADDR_LE_RANDOM ? .leRandom : .lePublic
            let peer = L2CAPAddress(String(decoding: address.prefix { $0 != 0 }, as: UTF8.self), kind: kind)
            guard let accepted = try? L2CAPChannel(connected: channel, peer: peer) else { continue }
            if case .terminated = sink.yield(accepted) { accepted.close() }
        }
    }
}
