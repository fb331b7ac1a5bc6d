import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// The thread that owns one libdbus connection. Every libdbus call on the connection runs here: other
/// threads hand it jobs through a queue and wake it with an eventfd. It never blocks on a reply; replies
/// are matched to waiting callers by serial, and call timeouts are kept here rather than in libdbus.
final class EventLoop: @unchecked Sendable {
    typealias Job = @Sendable (EventLoop) -> Void

    private struct Shared {
        var jobs: [Job] = []
        var closed = false
    }

    private struct PendingCall {
        let continuation: CheckedContinuation<Result<DBusMessage, DBusError>, Never>
        let deadline: ContinuousClock.Instant
        let serial: UInt32
        let what: String
    }

    let logger: Logger
    private let shared = Mutex(Shared())
    private let wakeFD: CInt
    // Confined to the loop thread.
    private(set) var connection: OpaquePointer?
    private var retired: OpaquePointer?
    private var pendingCalls: [UInt64: PendingCall] = [:]
    private var callBySerial: [UInt32: UInt64] = [:]
    private let nextCallID = Atomic<UInt64>(1)
    /// How often the thread has returned from waiting: what an idle connection costs the machine.
    let wakeups = Atomic<UInt64>(0)
    var onMessage: ((OpaquePointer, DBusMessage) -> Bool)?
    var onDisconnect: (() -> Void)?

    init(logger: Logger) {
        self.logger = logger
        self.wakeFD = cdbus_wakeup_fd()
        precondition(wakeFD >= 0, "eventfd failed: errno \(errno)")
    }

    deinit { close(wakeFD) }

    /// Opens the connection on a new loop thread and returns once the bus has accepted us.
    func start(_ open: @escaping @Sendable () throws(DBusError) -> OpaquePointer) async throws(DBusError) {
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            startLoopThread(named: "blepay-dbus") { [self] in
                do throws(DBusError) {
                    let c = try open()
                    connection = c
                    dbus_connection_set_exit_on_disconnect(c, 0)
                    let context = Unmanaged.passUnretained(self).toOpaque()
                    guard dbus_connection_add_filter(c, eventLoopFilter, context, nil) != 0 else {
                        preconditionFailure("libdbus is out of memory")
                    }
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                run()
            }
        }
        try result.get()
    }

    // MARK: Jobs

    /// Runs `job` on the loop thread, in submission order. Jobs submitted after close are dropped;
    /// `onClosed` tells the caller so it can fail whatever it was waiting for.
    func execute(_ job: @escaping Job, onClosed: (() -> Void)? = nil) {
        let accepted = shared.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        guard accepted else {
            onClosed?()
            return
        }
        wake()
    }

    /// Runs `body` on the loop thread and returns its result.
    func submit<T: Sendable>(_ body: @escaping @Sendable (EventLoop) throws(DBusError) -> T) async throws(DBusError) -> T {
        let result: Result<T, DBusError> = await withCheckedContinuation { continuation in
            execute(
                { loop in
                    do throws(DBusError) { continuation.resume(returning: .success(try body(loop))) } catch {
                        continuation.resume(returning: .failure(error))
                    }
                },
                onClosed: { continuation.resume(returning: .failure(DBusError(.disconnected, "connection is closed"))) })
        }
        return try result.get()
    }

    func shutdown() {
        execute { loop in loop.closeConnection(reason: "connection closed by us") }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: Sending (loop thread only)

    /// Sends a message and forgets it; returns false when the connection is gone.
    @discardableResult
    func send(_ message: RawMessage) -> Bool {
        guard let connection else { return false }
        return dbus_connection_send(connection, message.pointer, nil) != 0
    }

    /// Sends a method call whose reply resumes `continuation`, unless `timeout` passes first.
    func sendCall(
        _ message: RawMessage, id: UInt64, timeout: Duration,
        continuation: CheckedContinuation<Result<DBusMessage, DBusError>, Never>
    ) {
        guard let connection else {
            continuation.resume(returning: .failure(DBusError(.disconnected, "connection is closed")))
            return
        }
        if dbus_message_contains_unix_fds(message.pointer) != 0,
            dbus_connection_can_send_type(connection, CDBUS_TYPE_UNIX_FD) == 0
        {
            continuation.resume(
                returning: .failure(DBusError(.invalidValue, "this connection cannot pass unix file descriptors")))
            return
        }
        var serial: UInt32 = 0
        guard dbus_connection_send(connection, message.pointer, &serial) != 0 else {
            continuation.resume(returning: .failure(DBusError(.disconnected, "send failed: connection is closed")))
            return
        }
        let what = "\(dbus_message_get_interface(message.pointer).map { String(cString: $0) } ?? "")."
            + (dbus_message_get_member(message.pointer).map { String(cString: $0) } ?? "")
        pendingCalls[id] = PendingCall(
            continuation: continuation, deadline: .now + timeout, serial: serial, what: what)
        callBySerial[serial] = id
    }

    func makeCallID() -> UInt64 { nextCallID.wrappingAdd(1, ordering: .relaxed).oldValue }

    func failCall(_ id: UInt64, _ error: DBusError) {
        guard let call = pendingCalls.removeValue(forKey: id) else { return }
        callBySerial[call.serial] = nil
        call.continuation.resume(returning: .failure(error))
    }

    // MARK: Loop

    private func run() {
        guard let initial = connection else { return }
        var fd: CInt = -1
        dbus_connection_get_unix_fd(initial, &fd)
        while true {
            let (jobs, closed) = shared.withLock { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return (state.jobs, state.closed)
            }
            for job in jobs { job(self) }
            if closed || self.connection == nil { break }
            while let c = self.connection, dbus_connection_dispatch(c) == DBUS_DISPATCH_DATA_REMAINS {}
            guard let connection = self.connection else { break }
            expireCalls()
            if !shared.withLock({ $0.jobs.isEmpty }) { continue }

            var fds = [
                pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
                pollfd(
                    fd: fd,
                    events: Int16(POLLIN) | (dbus_connection_has_messages_to_send(connection) != 0 ? Int16(POLLOUT) : 0),
                    revents: 0),
            ]
            _ = poll(&fds, 2, pollTimeout())
            wakeups.add(1, ordering: .relaxed)
            if fds[0].revents != 0 {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
            }
            if fds[1].revents != 0 {
                dbus_connection_read_write(connection, 0)
            }
        }
        finish()
    }

    /// -1 (no limit) with no call pending: only a message on the socket or a job (the eventfd) then has anything
    /// for the loop to do, so an idle connection never wakes. With calls pending, the time to the earliest deadline,
    /// at most a second, as before: the unbounded wait was not yet proven in the rig.
    private func pollTimeout() -> CInt {
        guard let earliest = pendingCalls.values.map(\.deadline).min() else { return -1 }
        let remaining = ContinuousClock.now.duration(to: earliest)
        let ms = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1
        return CInt(max(0, min(1000, ms)))
    }

    private func expireCalls() {
        let now = ContinuousClock.now
        for (id, call) in pendingCalls where call.deadline <= now {
            failCall(id, DBusError(.timeout, name: DBusError.noReplyName, "no reply to \(call.what)"))
        }
    }

    /// Entry point from the libdbus filter for every incoming message.
    fileprivate func filter(_ raw: OpaquePointer) -> DBusHandlerResult {
        let type = dbus_message_get_type(raw)
        if type == CDBUS_MESSAGE_TYPE_METHOD_RETURN || type == CDBUS_MESSAGE_TYPE_ERROR {
            let serial = dbus_message_get_reply_serial(raw)
            guard let id = callBySerial.removeValue(forKey: serial), let call = pendingCalls.removeValue(forKey: id)
            else { return DBUS_HANDLER_RESULT_HANDLED }  // a late reply to a call we gave up on
            let reply = DBusMessage(raw)
            if reply.kind == .error {
                let error = DBusError.fromReply(name: reply.errorName ?? DBusError.failedName, message: reply.errorText)
                call.continuation.resume(returning: .failure(error))
            } else {
                call.continuation.resume(returning: .success(reply))
            }
            return DBUS_HANDLER_RESULT_HANDLED
        }
        if type == CDBUS_MESSAGE_TYPE_SIGNAL,
            dbus_message_is_signal(raw, CDBUS_INTERFACE_LOCAL, "Disconnected") != 0
        {
            closeConnection(reason: "the bus closed the connection")
            return DBUS_HANDLER_RESULT_HANDLED
        }
        let message = DBusMessage(raw)
        let handled = onMessage?(raw, message) ?? false
        return handled ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    private func closeConnection(reason: String) {
        guard let c = connection else { return }
        logger.debug("D-Bus connection closing", metadata: ["reason": "\(reason)"])
        shared.withLock { $0.closed = true }
        dbus_connection_close(c)
        for id in Array(pendingCalls.keys) {
            failCall(id, DBusError(.disconnected, name: DBusError.disconnectedName, reason))
        }
        onDisconnect?()
        onDisconnect = nil
        onMessage = nil
        connection = nil
        retired = c  // libdbus may still be dispatching on it; released when the loop ends
    }

    private func finish() {
        closeConnection(reason: "connection closed by us")
        // Jobs that raced with the close still run, so that everyone waiting hears that the connection is gone.
        let leftovers = shared.withLock { state in
            defer { state.jobs.removeAll() }
            return state.jobs
        }
        for job in leftovers { job(self) }
        if let retired { dbus_connection_unref(retired) }
        retired = nil
    }
}

private func eventLoopFilter(
    _ connection: OpaquePointer?, _ message: OpaquePointer?, _ context: UnsafeMutableRawPointer?
) -> DBusHandlerResult {
    guard let message, let context else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    return Unmanaged<EventLoop>.fromOpaque(context).takeUnretainedValue().filter(message)
}
