import CBluetooth
import Foundation
import Synchronization

/// An open LE credit-based channel: whole SDUs both ways, in order. A thread of its own sleeps in poll() on the
/// socket and an eventfd; it reads every SDU as it arrives into `incoming`, and sends the queued ones as the
/// peer's credits allow. The channel ends when either end closes it or the link drops: `incoming` finishes and
/// sends fail with `closed`.
public final class L2CAPChannel: Sendable {
    public let peer: L2CAPAddress
    /// The largest SDU this end takes.
    public let receiveMTU: Int
    /// The largest SDU the peer takes: the most `send` accepts.
    public let sendMTU: Int
    /// The peer's SDUs, in order; finishes when the channel closes.
    public let incoming: AsyncStream<[UInt8]>

    private struct Pending {
        let sdu: [UInt8]
        let sent: CheckedContinuation<L2CAPError?, Never>
    }

    private struct State {
        var queue: [Pending] = []
        /// Set under the lock by `close` or by the thread as it ends; the eventfd is written only while unset.
        var closed = false
    }

    private let fd: CInt
    private let wakeFD: CInt
    private let state = Mutex(State())
    private let sink: AsyncStream<[UInt8]>.Continuation

    /// Takes over a connected socket; closes it if the channel cannot be set up.
    init(connected fd: CInt, peer: L2CAPAddress) throws(L2CAPError) {
        let mtus: (receive: Int, send: Int)
        do throws(L2CAPError) {
            mtus = try Socket.mtus(fd)
        } catch {
            Glibc.close(fd)
            throw error
        }
        let wakeFD = cbt_wake_fd()
        guard wakeFD >= 0 else {
            let error = L2CAPError.system(.connectFailed, "eventfd")
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        self.wakeFD = wakeFD
        self.peer = peer
        (receiveMTU, sendMTU) = mtus
        (incoming, sink) = AsyncStream.makeStream()
        Thread { [self] in
            cbt_name_thread("blepay-l2cap")
            run()
        }.start()
    }

    /// Opens a channel from the adapter at `local` to `psm` on `peer`, which must already be connected over LE (the
    /// kernel reuses that connection). Fails with `timeout` past `timeout`, and with `closed` if the task is
    /// cancelled.
    public static func connect(
        from local: L2CAPAddress, to peer: L2CAPAddress, psm: UInt16, receiveMTU: Int, timeout: Duration
    ) async throws(L2CAPError) -> L2CAPChannel {
        let fd = try Socket.bound(local, psm: 0, receiveMTU: receiveMTU)
        guard cbt_l2cap_connect(fd, peer.address, Socket.addressType(peer.kind), psm) == 0 || errno == EINPROGRESS
        else {
            let error = L2CAPError.system(.connectFailed, "connect(\(peer), PSM \(psm))")
            Glibc.close(fd)
            throw error
        }
        if let error = await Connecting.wait(fd, timeout: timeout) {
            Glibc.close(fd)
            throw error
        }
        return try L2CAPChannel(connected: fd, peer: peer)
    }

    /// Sends one SDU; returns once the kernel has taken it (the peer had credit for it).
    public func send(_ sdu: [UInt8]) async throws(L2CAPError) {
        guard !sdu.isEmpty, sdu.count <= sendMTU else {
            throw L2CAPError(.sduTooLarge, "an SDU of \(sdu.count) bytes; the peer takes 1 to \(sendMTU)")
        }
        let failure: L2CAPError? = await withCheckedContinuation { sent in
            let queued = state.withLock { state in
                guard !state.closed else { return false }
                state.queue.append(Pending(sdu: sdu, sent: sent))
                Socket.wake(wakeFD)
                return true
            }
            if !queued { sent.resume(returning: L2CAPError(.closed, "the channel to \(peer) is closed")) }
        }
        if let failure { throw failure }
    }

    /// Closes the channel (the peer sees it end); SDUs not yet sent are dropped. Idempotent.
    public func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            Socket.wake(wakeFD)
        }
    }

    // MARK: The channel's thread

    private func run() {
        var buffer = [UInt8](repeating: 0, count: receiveMTU)
        while true {
            let (head, closed) = state.withLock { ($0.queue.first?.sdu, $0.closed) }
            if closed { break }
            var fds = [
                Socket.pollFD(wakeFD, POLLIN),
                Socket.pollFD(fd, POLLIN | (head == nil ? 0 : POLLOUT)),
            ]
            guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { Socket.drain(wakeFD) }
            let events = Int32(fds[1].revents)
            // A hang-up or error still leaves SDUs to read; reading reports the end.
            if events & (POLLIN | POLLHUP | POLLERR) != 0, !receiveAll(into: &buffer) { break }
            if events & POLLOUT != 0, let head, !sendHead(head) { break }
        }
        end()
    }

    /// Reads every SDU waiting; false once the channel has ended (end of stream or an error).
    private func receiveAll(into buffer: inout [UInt8]) -> Bool {
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                sink.yield(Array(buffer[..<count]))
            } else if count == 0 {
                return false
            } else if errno == EINTR {
                continue
            } else {
                return errno == EAGAIN || errno == EWOULDBLOCK
            }
        }
    }

    /// Sends the first queued SDU if the socket takes it now; false if sending failed (the channel is broken).
    private func sendHead(_ sdu: [UInt8]) -> Bool {
        let count = sdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        if count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return true }
        let failure = count < 0 ? L2CAPError.system(.sendFailed, "send to \(peer)") : nil
        let sent = state.withLock { $0.queue.removeFirst().sent }
        sent.resume(returning: failure)
        return failure == nil
    }

    /// Fails what is queued, finishes `incoming` and closes the descriptors: nobody writes the eventfd once
    /// `closed` is set.
    private func end() {
        let pending = state.withLock { state in
            state.closed = true
            defer { state.queue = [] }
            return state.queue
        }
        for item in pending { item.sent.resume(returning: L2CAPError(.closed, "the channel to \(peer) closed")) }
        sink.finish()
        Glibc.close(fd)
        Glibc.close(wakeFD)
    }
}

/// Waits for a non-blocking connect on a thread of its own, so that no cooperative thread blocks in poll().
enum Connecting {
    /// Nil once connected; otherwise why not.
    static func wait(_ fd: CInt, timeout: Duration) async -> L2CAPError? {
        let cancel = cbt_wake_fd()
        guard cancel >= 0 else { return .system(.connectFailed, "eventfd") }
        defer { Glibc.close(cancel) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<L2CAPError?, Never>) in
                Thread {
                    cbt_name_thread("blepay-l2cap-cn")
                    done.resume(returning: poll(fd, cancel: cancel, timeout: timeout))
                }.start()
            }
        } onCancel: {
            Socket.wake(cancel)
        }
    }

    private static func poll(_ fd: CInt, cancel: CInt, timeout: Duration) -> L2CAPError? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return L2CAPError(.timeout, "the channel did not open within \(timeout)") }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
            var fds = [Socket.pollFD(fd, POLLOUT), Socket.pollFD(cancel, POLLIN)]
            let ready = Glibc.poll(&fds, 2, CInt(milliseconds))
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { return .system(.connectFailed, "poll") }
            if fds[1].revents != 0 { return L2CAPError(.closed, "opening the channel was cancelled") }
            guard fds[0].revents != 0 else { continue }
            let status = cbt_socket_error(fd)
            guard status == 0 else {
                return L2CAPError(.connectFailed, "connect: \(String(cString: strerror(status)))", errno: status)
            }
            return nil
        }
    }
}
