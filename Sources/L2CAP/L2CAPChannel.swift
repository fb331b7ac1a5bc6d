import CBluetooth
import Foundation

/// An open LE credit-based channel: whole SDUs both ways, in order, over one socket (`packets`). The channel ends
/// when either end closes it or the link drops: `incoming` finishes and sends fail with `closed`.
public final class L2CAPChannel: Sendable {
    public let peer: L2CAPAddress
    /// The SDUs both ways: what carries a session needs no more than this.
    public let packets: PacketChannel

    /// The largest SDU this end takes.
    public var receiveMTU: Int { packets.receiveMTU }
    /// The largest SDU the peer takes: the most `send` accepts.
    public var sendMTU: Int { packets.sendMTU }
    /// The peer's SDUs, in order; finishes when the channel closes.
    public var incoming: AsyncStream<[UInt8]> { packets.incoming }

    /// Takes over a connected socket; closes it if the channel cannot be set up.
    init(connected fd: CInt, peer: L2CAPAddress) throws(L2CAPError) {
        let mtus: (receive: Int, send: Int)
        do throws(L2CAPError) {
            mtus = try Socket.mtus(fd)
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.peer = peer
        packets = try PacketChannel(
            reading: fd, writing: fd, receiveMTU: mtus.receive, sendMTU: mtus.send, peer: "\(peer)",
            threadName: "blepay-l2cap")
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
    public func send(_ sdu: [UInt8]) async throws(L2CAPError) { try await packets.send(sdu) }

    /// Closes the channel (the peer sees it end); SDUs not yet sent are dropped. Idempotent.
    public func close() { packets.close() }
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
