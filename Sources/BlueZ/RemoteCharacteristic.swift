import DBusKit
import Glibc

/// A GATT characteristic of a connected device (`org.bluez.GattCharacteristic1`), as a central uses it.
public struct RemoteCharacteristic: Sendable, Hashable {
    public let session: BlueZSession
    public let path: DBusObjectPath

    /// The object at `path` (e.g. the `device` of a `GattRequest`); it need not exist yet.
    public init(session: BlueZSession, path: DBusObjectPath) {
        self.session = session
        self.path = path
    }

    public enum WriteType: String, Sendable {
        /// Write Request: acknowledged by the peer; values over MTU−3 become a long write.
        case request
        /// Write Command: not acknowledged; at most MTU−3 bytes.
        case command
    }

    public var uuid: String? { session.property(path, BlueZ.gattCharacteristicInterface, "UUID") }
    public var flags: [String] { session.property(path, BlueZ.gattCharacteristicInterface, "Flags") ?? [] }
    /// The ATT MTU of the link, once exchanged (BlueZ 5.62 and later).
    public var mtu: Int? { session.property(path, BlueZ.gattCharacteristicInterface, "MTU", as: UInt16.self).map(Int.init) }

    public func read(offset: Int = 0) async throws(BlueZError) -> [UInt8] {
        let options: [String: DBusValue] = offset > 0 ? ["offset": .uint16(UInt16(clamping: offset))] : [:]
        let reply = try await retryingInProgress { () throws(BlueZError) in
            try await session.call(path, BlueZ.gattCharacteristicInterface, "ReadValue", [.stringDictionary(options)])
        }
        return try await bluez { () throws(DBusError) in try reply.argument(expecting: "ay").decode([UInt8].self) }
    }

    public func write(_ value: [UInt8], type: WriteType = .request) async throws(BlueZError) {
        let options: [String: DBusValue] = ["type": .string(type.rawValue)]
        _ = try await retryingInProgress { () throws(BlueZError) in
            try await session.call(
                path, BlueZ.gattCharacteristicInterface, "WriteValue", [.bytes(value), .stringDictionary(options)])
        }
    }

    /// Subscribes and returns every notified value, identical repeats included, in order. Subscribing when
    /// BlueZ is already re-arming an earlier subscription (`InProgress`) waits for `Notifying`.
    public func notifications(timeout: Duration = .seconds(10)) async throws(BlueZError) -> AsyncStream<[UInt8]> {
        let path = self.path
        let stream = session.changes { event -> [UInt8]? in
            guard case .changed(path, BlueZ.gattCharacteristicInterface, let values) = event,
                case .bytes(let bytes)? = values["Value"]
            else { return nil }
            return bytes
        }
        do {
            _ = try await session.call(path, BlueZ.gattCharacteristicInterface, "StartNotify")
        } catch where error.code == .inProgress {}
        let session = self.session
        _ = try await session.wait("notifications from \(path)", timeout: timeout) { _ -> Bool? in
            session.property(path, BlueZ.gattCharacteristicInterface, "Notifying", as: Bool.self) == true ? true : nil
        }
        return stream
    }

    /// A socket for writing the value (`AcquireWrite`): each packet sent is one Write Command, at most
    /// `mtu` − 3 bytes, with no D-Bus call; WriteValue is refused while it is open. BlueZ offers it only for a
    /// characteristic with `write-without-response`. Returns the descriptor, owned by the caller, and the ATT MTU.
    public func acquireWrite() async throws(BlueZError) -> (fd: CInt, mtu: Int) {
        try await acquire("AcquireWrite")
    }

    /// A socket that receives each notification as one packet (`AcquireNotify`), with no D-Bus signal; closing it
    /// unsubscribes. Returns the descriptor, owned by the caller, and the ATT MTU.
    public func acquireNotify() async throws(BlueZError) -> (fd: CInt, mtu: Int) {
        try await acquire("AcquireNotify")
    }

    /// A session's two sockets from bluetoothd: write commands to `write` and the notifications of `notify`, with
    /// the ATT MTU. The write socket is acquired first, and closed if the notify socket cannot be had: a notify socket
    /// left open until bluetoothd sees it closed would refuse `StartNotify` to a caller falling back to D-Bus.
    public static func acquireSockets(writingTo write: RemoteCharacteristic, notifiedBy notify: RemoteCharacteristic)
        async throws(BlueZError) -> (write: CInt, notify: CInt, mtu: Int)
    {
        let writing = try await write.acquireWrite()
        do {
            let notifying = try await notify.acquireNotify()
            return (writing.fd, notifying.fd, writing.mtu)
        } catch {
            close(writing.fd)
            throw error
        }
    }

    private func acquire(_ member: String) async throws(BlueZError) -> (fd: CInt, mtu: Int) {
        let reply = try await session.call(path, BlueZ.gattCharacteristicInterface, member, [.stringDictionary([:])])
        return try await bluez { () throws(DBusError) in
            guard reply.arguments.count == 2, case .unixFD(let fd) = reply.arguments[0] else {
                throw DBusError(.invalidValue, "\(member) answered '\(reply.signature)', not 'hq'")
            }
            let mtu = try reply.arguments[1].decode(UInt16.self)
            return (try fd.duplicate(), Int(mtu))
        }
    }

    public func stopNotifications() async throws(BlueZError) {
        _ = try await session.call(path, BlueZ.gattCharacteristicInterface, "StopNotify")
    }

    /// BlueZ allows one operation at a time per characteristic and answers `InProgress` to the next;
    /// such a call is retried a few times after a short pause.
    private func retryingInProgress<T>(_ operation: () async throws(BlueZError) -> T) async throws(BlueZError) -> T {
        var attempt = 0
        while true {
            do {
                return try await operation()
            } catch where error.code == .inProgress && attempt < 20 {
                attempt += 1
                try? await Task.sleep(for: .milliseconds(10 * attempt))
            }
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.path == rhs.path }
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }
}
