import BlepayControl
import DBusKit
import Synchronization

/// One daemon on one bus connection: its methods called, its `PaymentEvent` signals read as `ControlEvent`s.
struct DaemonConnection: Sendable {
    let connection: DBusConnection
    let address: (name: String, path: DBusObjectPath, interface: String)

    static func connect(_ role: DaemonRole, bus: DBusConnection.Bus, instance: String?) async throws(BlepayClientError)
        -> DaemonConnection
    {
        do {
            let connection = try await DBusConnection.connect(to: bus)
            return DaemonConnection(connection: connection, address: ControlAPI.address(role, instance: instance))
        } catch {
            throw BlepayClientError(code: "bus-unreachable", message: "\(error)")
        }
    }

    func call(_ member: String, _ arguments: [DBusValue] = []) async throws(BlepayClientError) -> DBusMessage {
        do {
            return try await connection.call(
                destination: address.name, path: address.path, interface: address.interface, member: member,
                arguments: arguments)
        } catch {
            throw BlepayClientError(error)
        }
    }

    /// The first argument of `member`'s reply, decoded.
    func value<T: DBusDecodable>(_ member: String, _ arguments: [DBusValue] = [], as type: T.Type = T.self)
        async throws(BlepayClientError) -> T
    {
        let reply = try await call(member, arguments)
        do {
            guard let first = reply.arguments.first else { throw DBusError(.typeMismatch, "\(member) answered nothing") }
            return try first.decode(T.self)
        } catch {
            throw BlepayClientError(code: "unexpected-reply", message: "\(member): \(error)")
        }
    }

    /// Every `PaymentEvent` the daemon signals from now on, until `events.finish()`.
    func events() async throws(BlepayClientError) -> EventStream {
        let signals: AsyncStream<DBusMessage>
        do {
            signals = try await connection.signals(matching: DBusMatchRule(
                sender: address.name, interface: address.interface, member: ControlAPI.eventSignal))
        } catch {
            throw BlepayClientError(error)
        }
        return EventStream(signals)
    }

    func status(of paymentID: String) async throws(BlepayClientError) -> ControlPayment {
        let value = try await self.value("PaymentStatus", [.string(paymentID)], as: DBusValue.self)
        do { return try ControlPayment(dbus: value) } catch {
            throw BlepayClientError(code: "unexpected-reply", message: "PaymentStatus: \(error)")
        }
    }
}

/// A daemon's events as an async sequence that its owner can end.
final class EventStream: Sendable {
    let stream: AsyncStream<ControlEvent>
    private let forwarding: Task<Void, Never>
    private let continuation: AsyncStream<ControlEvent>.Continuation

    init(_ signals: AsyncStream<DBusMessage>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ControlEvent.self)
        self.stream = stream
        self.continuation = continuation
        forwarding = Task {
            for await signal in signals {
                // A signal this version cannot read (a newer daemon's event kind) is skipped, not fatal.
                if let event = try? ControlEvent(signal: signal) { continuation.yield(event) }
            }
            continuation.finish()
        }
    }

    func finish() {
        forwarding.cancel()
        continuation.finish()
    }
}
