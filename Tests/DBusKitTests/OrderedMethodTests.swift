import DBusKit
import DBusTestSupport
import Foundation
import Synchronization
import Testing

/// Methods made with `ordered` are handled in the order their calls came, even when the caller does not wait for
/// each reply before the next call, as bluetoothd passes GATT write commands on.
@Suite(.timeLimit(.minutes(1))) struct OrderedMethodTests {
    /// Sends `count` calls of `Take(u)` with the numbers 0, 1, … (jeepney, a D-Bus library of its own), 100 at a
    /// time without waiting for replies (the bus refuses more replies pending on one connection), then reads their
    /// replies; prints the errors.
    static let caller = """
        import sys
        from jeepney import DBusAddress, MessageType, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        bus, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        connection = open_dbus_connection(bus=bus)
        target = DBusAddress('/test', bus_name=name, interface='org.blepay.Test')
        errors = []
        for start in range(0, count, 100):
            window = range(start, min(start + 100, count))
            for number in window:
                connection.send(new_method_call(target, 'Take', 'u', (number,)))
            for _ in window:
                reply = connection.receive(timeout=10)
                if reply.header.message_type == MessageType.error:
                    errors.append(reply.body)
        print(len(errors), errors[:1])
        """

    func takenNumbers(ordered: Bool, count: Int) async throws -> [UInt32] {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let taken = Mutex<[UInt32]>([])
        let take: DBusMethod.OrderedHandler = { call in
            let number: UInt32 = try call.arguments[0].decode()
            // Handlers take more or less time, as a customer's does with the fragments it is given.
            if number.isMultiple(of: 2) { usleep(2_000) }
            taken.withLock { $0.append(number) }
            return []
        }
        let method = ordered ? DBusMethod.ordered(input: "u", take) : DBusMethod(input: "u") { try take($0) }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Take": method])])

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.caller, pair.bus.address, pair.server.uniqueName, "\(count)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && printed == "0 []\n", "the caller printed \(printed)")
        return taken.withLock { $0 }
    }

    @Test func callsToAnOrderedMethodAreHandledInTheOrderTheyCame() async throws {
        let count = 400
        #expect(try await takenNumbers(ordered: true, count: count) == (0..<UInt32(count)).map { $0 })
    }
}
