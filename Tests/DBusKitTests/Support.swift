import DBusKit
import DBusTestSupport
import Testing

let testInterface = "org.blepay.Test"

/// A private bus with two connections: `server` exports objects, `client` calls them.
struct BusPair {
    let bus: TestBus
    let server: DBusConnection
    let client: DBusConnection

    static func make() async throws -> BusPair {
        let bus = try TestBus()
        return BusPair(bus: bus, server: try await bus.connect(), client: try await bus.connect())
    }

    /// Calls `member` of `testInterface` on the server's object at `path`.
    func call(
        _ member: String, _ arguments: [DBusValue] = [], path: DBusObjectPath = "/test",
        timeout: Duration = .seconds(10)
    ) async throws(DBusError) -> DBusMessage {
        try await client.call(
            destination: server.uniqueName, path: path, interface: testInterface, member: member,
            arguments: arguments, timeout: timeout)
    }

    func stop() {
        client.close()
        server.close()
        bus.stop()
    }
}

/// An `Echo` method taking and returning one value of `signature`.
func echo(_ signature: DBusSignature) -> DBusMethod {
    DBusMethod(input: signature, output: signature) { call in call.arguments }
}

/// The typed error an operation throws, or nil if it did not throw one.
func dbusError(_ operation: () async throws -> Void) async -> DBusError? {
    do {
        try await operation()
        return nil
    } catch let error as DBusError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

/// An end marker: a signal whose last argument is this string.
let endMarker = DBusValue.string("end")

/// Reads signals from `stream` until the first end marker (or `Sentinel` member); returns "path|member" of
/// those seen before it, so a test needs no sleep to know it has seen everything.
func membersUntilSentinel(_ stream: AsyncStream<DBusMessage>) async -> [String] {
    var seen: [String] = []
    for await message in stream {
        if message.member == "Sentinel" || message.arguments.last == endMarker { return seen }
        seen.append("\(message.path?.rawValue ?? "")|\(message.member ?? "")")
    }
    return seen
}
