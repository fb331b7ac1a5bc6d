import Foundation
import Glibc

/// Plain HTTP/1.1 on 127.0.0.1 for the tests of what a process serves there (its metrics): a free port to give it,
/// and one GET read to the end.
public enum LoopbackHTTP {
    /// A port nothing listens on now.
    public static func freePort() throws -> Int {
        let listener = try SilentListener()
        listener.close()
        return listener.port
    }

    /// The status and body of `GET path`; waits on a thread of its own.
    public static func get(port: Int, _ path: String) async throws -> (status: Int, body: String) {
        try await onOwnThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
            let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            _ = request.withCString { send(fd, $0, strlen($0), 0) }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                answer += buffer[..<count]
            }
            let text = String(decoding: answer, as: UTF8.self)
            let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
            return (status, body)
        }
    }
}
