import Foundation
import L2CAP
import Testing

/// A packet channel over two socket pairs standing in for the sockets bluetoothd hands a GATT client: one it reads
/// write commands from (`AcquireWrite`), one it writes notifications to (`AcquireNotify`).
@Suite(.timeLimit(.minutes(1))) struct PacketChannelTests {
    /// bluetoothd's ends of the two pairs, and a channel on the client's ends.
    struct Fixture {
        let writes: CInt
        let notifications: CInt
        let channel: PacketChannel

        init(sendMTU: Int = 244) throws {
            let write = try Self.pair()
            let notify = try Self.pair()
            (writes, notifications) = (write[0], notify[0])
            channel = try PacketChannel(
                reading: notify[1], writing: write[1], receiveMTU: 247, sendMTU: sendMTU, peer: "a test",
                threadName: "blepay-test")
        }

        static func pair() throws -> [CInt] {
            var fds: [CInt] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
            else { throw POSIXError(.EIO) }
            return fds
        }

        /// One packet from bluetoothd's write socket, waiting up to 5 s.
        func written() -> [UInt8]? {
            var ready = pollfd(fd: writes, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 5_000) == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = buffer.withUnsafeMutableBytes { recv(writes, $0.baseAddress, $0.count, 0) }
            return count > 0 ? Array(buffer[..<count]) : nil
        }

        func notify(_ packet: [UInt8]) {
            _ = packet.withUnsafeBytes { send(notifications, $0.baseAddress, $0.count, 0) }
        }

        func closeBluetoothdsEnds() {
            close(writes)
            close(notifications)
        }
    }

    @Test func packetsGoOutOnTheWriteSocketAndComeInFromTheNotifySocketWholeAndInOrder() async throws {
        let fixture = try Fixture()
        defer { fixture.channel.close() }
        let packets = (0..<50).map { index in [UInt8](repeating: UInt8(index), count: 1 + index * 4) }
        for packet in packets { try await fixture.channel.send(packet) }
        for packet in packets { #expect(fixture.written() == packet) }

        for packet in packets { fixture.notify(packet) }
        var received: [[UInt8]] = []
        for await packet in fixture.channel.incoming {
            received.append(packet)
            if received.count == packets.count { break }
        }
        #expect(received == packets)
        fixture.closeBluetoothdsEnds()
    }

    @Test func aPacketOverTheSendMTUIsRefusedWithItsCode() async throws {
        let fixture = try Fixture(sendMTU: 20)
        defer {
            fixture.channel.close()
            fixture.closeBluetoothdsEnds()
        }
        do {
            try await fixture.channel.send([UInt8](repeating: 1, count: 21))
            Issue.record("a packet over the send MTU was sent")
        } catch {
            #expect(error.code == .sduTooLarge)
        }
        try await fixture.channel.send([UInt8](repeating: 1, count: 20))
        #expect(fixture.written()?.count == 20)
    }

    /// bluetoothd closes both sockets when the device disconnects: the channel ends, what was received before is
    /// still delivered, and a send fails with `closed`.
    @Test func theChannelEndsWhenBluetoothdClosesItsSockets() async throws {
        let fixture = try Fixture()
        fixture.notify([1, 2, 3])
        fixture.closeBluetoothdsEnds()
        var received: [[UInt8]] = []
        for await packet in fixture.channel.incoming { received.append(packet) }
        #expect(received == [[1, 2, 3]])
        do {
            try await fixture.channel.send([4])
            Issue.record("a send after the end succeeded")
        } catch {
            #expect(error.code == .closed)
        }
    }

    /// Only the write socket hangs up (bluetoothd dropped the write lock): the channel ends all the same.
    @Test func aHangUpOnTheWriteSocketAloneEndsTheChannel() async throws {
        let fixture = try Fixture()
        close(fixture.writes)
        for await _ in fixture.channel.incoming {}
        close(fixture.notifications)
    }
}
