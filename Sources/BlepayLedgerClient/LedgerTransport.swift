import BlepayConfiguration
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// How a client reaches an `https://` ledger: one HTTP/1.1 exchange per TLS connection. It is the client's own
/// rather than a general HTTP client's so that the server's certificate, its chain and name verified, is checked
/// against the pin before a byte of the request is sent. (A loopback `http://` ledger is reached through
/// AsyncHTTPClient's pooled connections.)
final class LedgerTransport: Sendable {
    private let host: String
    private let port: Int
    /// The `Host` header: an IPv6 address in brackets.
    private let authority: String
    /// The TLS settings, or why there are none (an unreadable CA file): every request then fails with it.
    private let tls: Result<NIOSSLContext, LedgerClientError>
    private let pin: [UInt8]?
    /// The TLS failure last logged, so that a daemon retrying every few seconds says it once.
    private let lastFailure = Mutex<String?>(nil)

    init(host: String, port: Int, trust: LedgerTrust) {
        self.host = host
        self.port = port
        authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        tls = Result { () throws(LedgerClientError) in try trust.context() }
        pin = trust.pin
    }

    /// Sends one request and collects the answer (at most 4 MiB). A `LedgerClientError` (no trusted TLS) means
    /// nothing was sent; any other error, that the exchange failed.
    func exchange(_ method: String, _ path: String, headers: HTTPHeaders, body: [UInt8], timeout: TimeAmount)
        async throws -> (Int, [UInt8])
    {
        let context = try tls.get()
        // Copied out: the channel's closures must not hold on to the transport.
        let (host, port, authority, pin) = (host, port, authority, pin)
        let deadline = NIODeadline.now() + timeout
        let (channel, handshake) = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    let handshake = channel.eventLoop.makePromise(of: Void.self)
                    // No server name for an address: NIO SSL then checks the address against the certificate.
                    try pipeline.addHandler(NIOSSLClientHandler(context: context,
                        serverHostname: Loopback.isAddress(host) ? nil : host))
                    try pipeline.addHandler(HandshakeWatch(handshake))
                    try pipeline.addHTTPClientHandlers()
                    let exchange = try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                    return (exchange, handshake.futureResult)
                }
            }
        let timer = channel.channel.eventLoop.scheduleTask(deadline: deadline) { channel.channel.close(promise: nil) }
        defer { timer.cancel() }
        do {
            return try await Self.exchange(method, path, headers: headers, body: body, on: channel, handshake: handshake,
                authority: authority, pin: pin)
        } catch where NIODeadline.now() >= deadline && !(error is LedgerClientError) {
            // The timer closed the connection: say so rather than how the closing showed.
            throw TimedOut(timeout: timeout)
        }
    }

    /// A connection closed at the deadline.
    private struct TimedOut: Error, CustomStringConvertible {
        let timeout: TimeAmount
        var description: String { "no answer within \(timeout.nanoseconds / 1_000_000) ms" }
    }

    private static func exchange(_ method: String, _ path: String, headers: HTTPHeaders, body: [UInt8],
        on channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, handshake: EventLoopFuture<Void>,
        authority: String, pin: [UInt8]?) async throws -> (Int, [UInt8])
    {
        try await channel.executeThenClose { inbound, outbound in
            do { try await handshake.get() } catch { throw Self.tlsFailure(error) ?? error }
            if let pin {
                let leaf = try await channel.channel.nioSSL_peerCertificate().get()
                let presented = try leaf.map(LedgerTrust.pin(of:))
                guard presented == pin else {
                    throw LedgerClientError.tlsFailed(
                        "the ledger's certificate key is not the pinned one (it is sha256/\(Data(presented ?? []).base64EncodedString()))")
                }
            }
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path, headers: headers)
            head.headers.replaceOrAdd(name: "Host", value: authority)
            head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            try await outbound.write(.head(head))
            if !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try await outbound.write(.end(nil))
            var status = 0
            var answer = ByteBuffer()
            for try await part in inbound {
                switch part {
                case .head(let head): status = Int(head.status.code)
                case .body(var chunk):
                    guard answer.readableBytes + chunk.readableBytes <= 4 << 20 else {
                        throw LedgerClientError.invalidResponse("\(method) \(path): an answer over 4 MiB")
                    }
                    answer.writeBuffer(&chunk)
                case .end: return (status, Array(buffer: answer))
                }
            }
            throw ChannelError.eof
        }
    }

    /// `error` as the client reports it when TLS refused the server: its certificate's chain or name.
    private static func tlsFailure(_ error: any Error) -> LedgerClientError? {
        switch error {
        case let error as LedgerClientError: error
        case NIOSSLError.handshakeFailed(let reason): .tlsFailed("the handshake failed: \(reason)")
        case let error as NIOSSLExtraError: .tlsFailed("\(error)")
        default: nil
        }
    }

    /// Logs a TLS failure as an error the first time it is seen (again after a connection that was trusted), else
    /// at debug level; `outcome` is how an exchange ended, nil when it was answered.
    func report(_ outcome: LedgerClientError?, logger: Logger) {
        let reason: String? = if case .tlsFailed? = outcome { outcome?.description } else { nil }
        let new = lastFailure.withLock { last in defer { last = reason }; return last != reason }
        guard let reason else { return }
        logger.log(level: new ? .error : .debug, "no trusted connection to the ledger; not retried",
            metadata: ["error": "\(reason)"])
    }
}

/// Fulfils a promise when the TLS handshake completes, or fails it with why it did not: an error, the connection
/// closing, or the channel torn down without ever connecting (the network unreachable).
private final class HandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let promise: EventLoopPromise<Void>
    private var settled = false

    init(_ promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { settle(nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        settle(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        settle(ChannelError.eof)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        settle(ChannelError.ioOnClosedChannel)
    }

    private func settle(_ error: (any Error)?) {
        guard !settled else { return }
        settled = true
        if let error { promise.fail(error) } else { promise.succeed() }
    }
}
