import ArgumentParser
import BlepayControl
import BlepayDaemonConfiguration
import BlepayProtocol
import DBusKit
import FoundationEssentials
import Glibc

/// The daemons as `blepayctl` reaches them: calls with refusals turned into exit codes, and output as text or JSON.
struct Control {
    let connection: DBusConnection
    let json: Bool
    let instance: String?

    func call(_ role: DaemonConfiguration.Role, _ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        let (name, path, interface) = address(role)
        do {
            return try await connection.call(destination: name, path: path, interface: interface, member: member, arguments: arguments)
        } catch {
            switch error.name {
            case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
                throw Failure.unreachable("the \(role.rawValue) daemon is not running")
            case "org.freedesktop.DBus.Error.AccessDenied":
                throw Failure.unreachable("not allowed to control the \(role.rawValue) daemon (root or the blepay group only)")
            case ControlAPI.errorPrefix + "LedgerOffline":
                throw Failure.ledgerOffline(error.message)
            case let name? where name.hasPrefix(ControlAPI.errorPrefix):
                throw Failure.refused(error.message)
            case _ where error.code == .timeout:
                throw Failure.unreachable("the \(role.rawValue) daemon did not answer \(member) in time")
            default:
                throw Failure.unreachable("\(member) failed: \(error)")
            }
        }
    }

    func isRunning(_ role: DaemonConfiguration.Role) async throws -> Bool {
        (try? await connection.nameOwner(address(role).name)) != nil
    }

    func status(_ role: DaemonConfiguration.Role, _ paymentID: String) async throws -> ControlPayment {
        try ControlPayment(dbus: try await call(role, "PaymentStatus", [.string(paymentID)]).arguments[0])
    }

    func instruments() async throws -> [InstrumentLine] {
        try await call(.customer, "ListInstruments").arguments[0].decode([DBusValue].self).map { try InstrumentLine($0) }
    }

    func firstInstrument() async throws -> String {
        guard let usable = try await instruments().first(where: { !$0.blocked }) else {
            throw Failure.refused("no-instrument: no usable instrument: add one at the ledger, or name one with --instrument")
        }
        return usable.id
    }

    /// Prints every `PaymentEvent` of `roles` until interrupted.
    func watch(_ roles: [DaemonConfiguration.Role]) async throws {
        let streams = try await roles.asyncMap { role in
            (role, try await connection.signals(matching: DBusMatchRule(
                sender: address(role).name, interface: address(role).interface, member: ControlAPI.eventSignal)))
        }
        await withTaskGroup(of: Void.self) { group in
            for (role, stream) in streams {
                group.addTask {
                    for await message in stream {
                        guard let event = try? ControlEvent(signal: message) else { continue }
                        self.print(WatchLine(daemon: role, event: event))
                    }
                }
            }
        }
    }

    func print(_ line: some OutputLine) { print(line, text: line.text) }

    /// Calls `member`, whose answer is an array of records, and prints each as `read` makes it a line.
    func printEach<Line: OutputLine>(
        _ role: DaemonConfiguration.Role, _ member: String, _ read: (DBusValue) throws(DBusError) -> Line
    ) async throws {
        let reply = try await call(role, member)
        for value in try reply.arguments[0].decode([DBusValue].self) { print(try read(value)) }
    }

    /// Writes one line at once, unbuffered, so that `watch` into a pipe or file shows each event as it happens.
    func print(_ object: some Encodable, text: String) {
        var line = Data(text.utf8)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            line = (try? encoder.encode(object)) ?? Data()
        }
        Output.write(line + Data("\n".utf8), to: STDOUT_FILENO)
    }

    func address(_ role: DaemonConfiguration.Role) -> (name: String, path: DBusObjectPath, interface: String) {
        ControlAPI.address(role, instance: instance)
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
