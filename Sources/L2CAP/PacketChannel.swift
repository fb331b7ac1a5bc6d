import CBluetooth
import Foundation
import Synchronization

/// Whole packets both ways over SOCK_SEQPACKET descriptors: an L2CAP channel's one socket, or the two sockets BlueZ
/// hands a GATT client for a characteristic's writes and notifications (`AcquireWrite`, `AcquireNotify`). A thread of
/// its own sleeps in poll() on the descriptors and an eventfd; it reads every packet as it arrives into `incoming`,
/// and sends the queued ones as the socket takes them. The channel ends when either end closes it or the link drops:
/// `incoming` finishes and sends fail with `closed`.
public final class PacketChannel: Sendable {
    /// The largest packet this end takes.
    public let receiveMTU: Int
    /// The largest packet the peer takes: the most `send` accepts.
    public let sendMTU: Int
    /// The peer's packets, in order; finishes when the channel closes.
    public let incoming: AsyncStream<[UInt8]>
    /// Who is at the other end, for errors.
    let peer: String

    private struct Pending {
        let packet: [UInt8]
        let sent: CheckedContinuation<L2CAPError?, Never>
    }

    private struct State {
        var queue: [Pending] = []
        /// Set under the lock by `close` or by the thread as it ends; the eventfd is written only while unset.
        var closed = false
    }

    private let reading: CInt
    private let writing: CInt
    private let wakeFD: CInt
    private let state = Mutex(State())
    private let sink: AsyncStream<[UInt8]>.Continuation

    /// Takes over `reading` and `writing` (the same descriptor for a socket used both ways) and closes them when the
    /// channel ends, or at once if it cannot be set up.
    public init(
        reading: CInt, writing: CInt, receiveMTU: Int, sendMTU: Int, peer: String, threadName: String
    ) throws(L2CAPError) {
        let wakeFD = cbt_wake_fd()
        guard wakeFD >= 0 else {
            let error = L2CAPError.system(.connectFailed, "eventfd")
            Glibc.close(reading)
            if writing != reading { Glibc.close(writing) }
            throw error
        }
        self.reading = reading
        self.writing = writing
        self.wakeFD = wakeFD
        self.receiveMTU = receiveMTU
        self.sendMTU = sendMTU
        self.peer = peer
        (incoming, sink) = AsyncStream.makeStream()
        Thread { [self] in
            cbt_name_thread(threadName)
            run()
        }.start()
    }

    /// Sends one packet; returns once the kernel has taken it (for an L2CAP channel: the peer had credit for it).
    public func send(_ packet: [UInt8]) async throws(L2CAPError) {
        guard !packet.isEmpty, packet.count <= sendMTU else {
            throw L2CAPError(.sduTooLarge, "a packet of \(packet.count) bytes; the peer takes 1 to \(sendMTU)")
        }
        let failure: L2CAPError? = await withCheckedContinuation { sent in
            let queued = state.withLock { state in
                guard !state.closed else { return false }
                state.queue.append(Pending(packet: packet, sent: sent))
                Socket.wake(wakeFD)
                return true
            }
            if !queued { sent.resume(returning: L2CAPError(.closed, "the channel to \(peer) is closed")) }
        }
        if let failure { throw failure }
    }

    /// Closes the channel (the peer sees it end); packets not yet sent are dropped. Idempotent.
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
        let oneSocket = reading == writing
        while true {
            let (head, closed) = state.withLock { ($0.queue.first?.packet, $0.closed) }
            if closed { break }
            let sending = head == nil ? 0 : POLLOUT
            var fds = [
                Socket.pollFD(wakeFD, POLLIN),
                Socket.pollFD(reading, POLLIN | (oneSocket ? sending : 0)),
                // poll() reports a hang-up or error whatever is asked for, so a write-only socket is watched too.
                Socket.pollFD(oneSocket ? -1 : writing, sending),
            ]
            guard poll(&fds, 3, -1) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { Socket.drain(wakeFD) }
            let readEvents = Int32(fds[1].revents)
            let writeEvents = Int32(oneSocket ? fds[1].revents : fds[2].revents)
            // A hang-up or error still leaves packets to read; reading reports the end.
            if readEvents & (POLLIN | POLLHUP | POLLERR) != 0, !receiveAll(into: &buffer) { break }
            if !oneSocket, writeEvents & (POLLHUP | POLLERR) != 0 { break }
            if writeEvents & POLLOUT != 0, let head, !sendHead(head) { break }
        }
        end()
    }

    /// Reads every packet waiting; false once the channel has ended (end of stream or an error).
    private func receiveAll(into buffer: inout [UInt8]) -> Bool {
        while true {
            let count = buffer.withUnsafeMutableBytes {
                Glibc.recv(reading, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
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

    /// Sends the first queued packet if the socket takes it now; false if sending failed (the channel is broken).
    private func sendHead(_ packet: [UInt8]) -> Bool {
        let count = packet.withUnsafeBytes {
            Glibc.send(writing, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
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
        Glibc.close(reading)
        if writing != reading { Glibc.close(writing) }
        Glibc.close(wakeFD)
    }
}
