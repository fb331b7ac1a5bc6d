@testable import DBusKit
import DBusTestSupport
import Foundation
import Testing

/// Method calls: replies, typed errors, timeouts, cancellation, concurrency and re-entrancy.
@Suite(.timeLimit(.minutes(1))) struct CallTests {
    /// What the daemons' watchdog asks of each connection, on a bus with the system bus's policy: a ping once got
    /// `AccessDenied` there (Peer.Ping to the bus), and systemd never heard the watchdog.
    @Test func aPingIsAnsweredOnTheSystemBusPolicy() async throws {
        let bus = try TestBus(systemPolicyWith: [])
        defer { bus.stop() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        try await connection.ping(timeout: .seconds(5))
    }

    @Test func wrongArgumentsAreRefusedBeforeTheHandler() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Echo": echo("s")])])
        let error = await dbusError { _ = try await pair.call("Echo", [.uint32(1)]) }
        #expect(error?.code == .remote)
        #expect(error?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        let reply = try await pair.call("Echo", [.string("ok")])
        #expect(throws: DBusError.self) { try reply.arguments(expecting: "u") }
        #expect(try reply.arguments(expecting: "s") == [.string("ok")])
    }

    @Test func handlerErrorsKeepTheirNameAndMessage() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let nope = DBusMethod { _ in throw DBusError.reply(name: "org.blepay.Error.Nope", "no such payment") }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Nope": nope])])
        let error = await dbusError { _ = try await pair.call("Nope") }
        #expect(error == DBusError(.remote, name: "org.blepay.Error.Nope", "no such payment"))

        let unknownMethod = await dbusError { _ = try await pair.call("Missing") }
        #expect(unknownMethod?.name == "org.freedesktop.DBus.Error.UnknownMethod")
        let unknownObject = await dbusError { _ = try await pair.call("Nope", path: "/elsewhere") }
        #expect(unknownObject?.name == "org.freedesktop.DBus.Error.UnknownObject")
        let noService = await dbusError {
            _ = try await pair.client.call(destination: "org.blepay.Nobody", path: "/", interface: testInterface, member: "M")
        }
        #expect(noService?.code == .remote)
        #expect(noService?.name == "org.freedesktop.DBus.Error.ServiceUnknown")
    }

    @Test func noReplyWithinTheTimeoutThrowsTimeout() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let slow = DBusMethod { _ in
            try await Task.sleep(for: .seconds(30))
            return []
        }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Slow": slow])])
        let error = await dbusError { _ = try await pair.call("Slow", timeout: .milliseconds(200)) }
        #expect(error?.code == .timeout)
    }

    @Test func cancellingTheCallerThrowsCancelled() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let slow = DBusMethod { _ in
            try await Task.sleep(for: .seconds(30))
            return []
        }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Slow": slow])])
        let task = Task { await dbusError { _ = try await pair.call("Slow") } }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        #expect(await task.value?.code == .cancelled)
    }

    /// What a stopping service does after its task was cancelled (unregistering its advertisement and GATT
    /// application, stopping discovery) still reaches the bus and is answered.
    @Test func aCallerCancelledBeforeItCallsIsStillAnswered() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Echo": echo("s")])])
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pair.call("Echo", [.string("cleaning up")]).arguments(expecting: "s")
        }
        #expect(try await task.value == [.string("cleaning up")])
    }

    @Test func closedConnectionsFailWithDisconnected() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        pair.client.close()
        let error = await dbusError { _ = try await pair.call("Echo", [.string("x")]) }
        #expect(error?.code == .disconnected)
    }

    @Test func losingTheBusFailsPendingCallsAndEndsSignalStreams() async throws {
        let pair = try await BusPair.make()
        let slow = DBusMethod { _ in
            try await Task.sleep(for: .seconds(30))
            return []
        }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Slow": slow])])
        let signals = try await pair.client.signals(matching: DBusMatchRule(interface: testInterface))
        let pending = Task { await dbusError { _ = try await pair.call("Slow") } }
        try await Task.sleep(for: .milliseconds(100))
        pair.bus.stop()
        #expect(await pending.value?.code == .disconnected)
        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test func thousandConcurrentCallsEachGetTheirOwnReply() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let double = DBusMethod(input: "u", output: "u") { call in
            [.uint32(try call.arguments[0].decode(UInt32.self) &* 2)]
        }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Double": double])])
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<50 {
                group.addTask {
                    var bad = 0
                    for i in 0..<20 {
                        let n = UInt32(task * 20 + i)
                        let reply = try await pair.call("Double", [.uint32(n)])
                        if reply.arguments != [.uint32(n * 2)] { bad += 1 }
                    }
                    return bad
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    /// The server's handler calls back into the client before replying, as bluetoothd does during
    /// RegisterApplication: the client's connection must answer while its own call is pending.
    @Test func aPeerMayCallBackWhileWeWaitForItsReply() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.client.export("/callback", interfaces: [DBusInterface(testInterface, methods: ["Echo": echo("s")])])
        let server = pair.server
        let register = DBusMethod(input: "s", output: "s") { call in
            let back = try await server.call(
                destination: call.sender, path: "/callback", interface: testInterface, member: "Echo",
                arguments: [.string("called back")], timeout: .seconds(5))
            return back.arguments
        }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Register": register])])
        let reply = try await pair.call("Register", [.string("x")], timeout: .seconds(10))
        #expect(reply.arguments == [.string("called back")])
    }
}

/// An idle connection's thread sleeps until the bus or a job wakes it: it used to wake once a second to look.
@Suite struct IdleTests {
    @Test func anIdleConnectionDoesNotWake() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        // What the bus sends a new connection (NameAcquired) arrives first.
        try await Task.sleep(for: .milliseconds(500))
        let before = pair.client.loop.wakeups.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(2500))
        #expect(pair.client.loop.wakeups.load(ordering: .relaxed) == before)
        // A call still wakes it, and it goes back to sleep after the reply.
        _ = try await pair.client.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetId")
        #expect(pair.client.loop.wakeups.load(ordering: .relaxed) > before)
    }

    /// `top -H`, `ps -L` and backtraces tell a connection's thread apart from the process's others by its name.
    @Test func theConnectionsThreadIsNamedForTheKernel() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        #expect(names.contains("blepay-dbus\n"))
    }
}
