import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation
import Glibc
import LedgerTestSupport
import Synchronization
import TestSupport
import Testing

/// What a client cannot make the ledger spend: connections held by half-sent requests, open sockets past the cap,
/// and write transactions or body parsing for requests whose credentials are wrong.
@Suite struct HardeningTests {
    @Test func aHalfSentHeadIsClosedAfterTheIdleTimeout() async throws {
        let ledger = try await RunningLedger.start(.sqlite) { $0.idleTimeoutSeconds = 1 }
        defer { Task { try await ledger.stop() } }
        let connection = try RawConnection(port: ledger.port)
        try connection.send("POST /v1/accounts HTTP/1.1\r\nHost: ledger\r\nContent-Type: appl")
        #expect(try await connection.closedByPeer(within: 10))
    }

    @Test func aBodySentSlowlyIsCutOffAtTheRequestTimeout() async throws {
        let ledger = try await RunningLedger.start(.sqlite) { $0.requestTimeoutSeconds = 1 }
        defer { Task { try await ledger.stop() } }
        let connection = try RawConnection(port: ledger.port)
        try connection.send("POST /v1/accounts HTTP/1.1\r\nHost: ledger\r\nContent-Length: 100\r\n\r\n{\"kind\":")
        #expect(try await connection.closedByPeer(within: 10))
    }

    @Test func connectionsBeyondTheCapAreNotAccepted() async throws {
        let ledger = try await RunningLedger.start(.sqlite) { $0.maximumConnections = 4 }
        defer { Task { try await ledger.stop() } }
        var held: [RawConnection] = []
        for _ in 0..<40 {
            let connection = try RawConnection(port: ledger.port)
            try connection.send("GET /v1/health HTTP/1.1\r\nHost: ledger\r\n")
            held.append(connection)
        }
        try await Task.sleep(for: .milliseconds(500))
        let accepted = try acceptedSockets(port: ledger.port)
        #expect(accepted <= 4, "the ledger holds \(accepted) connections")
        withExtendedLifetime(held) {}
    }

    @Test(arguments: StorageKind.allCases)
    func refusedCredentialsCostNoWriteTransaction(kind: StorageKind) async throws {
        // No expiry sweeps during the test: they are the ledger's own writes.
        let (ledger, storage) = try await RunningLedger.watched(kind) { $0.expiryIntervalSeconds = 3600 }
        defer { Task { try await ledger.stop() } }
        let merchant = try await ledger.merchant()
        let request = try ledger.request(by: merchant, amount: 500)
        let body = try JSONEncoder().encode(CreatePayment(request: Data(request.encoded).base64EncodedString()))
        let writesBefore = storage.writes.load(ordering: .relaxed)
        for attempt in 0..<10 {
            var forged = ledger.signed("POST", "/v1/payments", body: Array(body), device: merchant.device)
            forged[3].1 = String(repeating: "0", count: 64)
            #expect(try await ledger.raw("POST", "/v1/payments", headers: forged, body: Array(body)).status == 401)
            var stranger = ledger.signed("POST", "/v1/payments", body: Array(body), device: merchant.device)
            stranger[0].1 = "dev_unknown\(attempt)"
            #expect(try await ledger.raw("POST", "/v1/payments", headers: stranger, body: Array(body)).status == 401)
            let admin = [("Authorization", "Bearer wrong"), ("Idempotency-Key", UUID().uuidString)]
            #expect(try await ledger.raw("POST", "/v1/accounts", headers: admin, body: Array(#"{"kind":"customer","name":"x"}"#.utf8)).status == 401)
        }
        #expect(storage.writes.load(ordering: .relaxed) == writesBefore)
    }
}

/// A plain TCP connection to the ledger on loopback, for requests no HTTP client would send.
final class RawConnection: Sendable {
    let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw POSIXError(.EPIPE) }
    }

    /// Whether the ledger closes the connection (end of stream or reset) within `seconds`; whatever it sends first
    /// (an error answer) is read past.
    func closedByPeer(within seconds: Int) async throws -> Bool {
        let socket = self.socket
        return try await onOwnThread {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(socket, &buffer, buffer.count, 0)
                if count == 0 { return true }
                if count < 0 { return errno == ECONNRESET }
            }
        }
    }

    deinit { close(socket) }
}

/// How many of this process's open sockets are connections the server on `port` accepted: established TCP
/// sockets whose local port is `port`. Connections waiting in the listen backlog have no descriptor yet.
func acceptedSockets(port: Int) throws -> Int {
    var inodes: Set<String> = []
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "01",
                let local = fields[1].split(separator: ":").last, Int(local, radix: 16) == port
            else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    return descriptors.filter { fd in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
            target.hasPrefix("socket:[")
        else { return false }
        return inodes.contains(String(target.dropFirst(8).dropLast()))
    }.count
}
