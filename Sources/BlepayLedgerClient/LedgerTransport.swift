import BlepayConfiguration
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// How a client reaches an `https://` ledger: HTTP/1.1 over TLS connections it keeps for the next request. It is the
/// client's own rather than a general HTTP client's so that the server's certificate, its chain and name verified, is
/// checked against the pin before a byte of a request is sent on a connection. (A loopback `http://` ledger is
/// reached through AsyncHTTPClient's pooled connections.) A kept connection costs no timer: one the server closed is
/// dropped as it closes, and one idle longer than `maximumIdle` is closed when next looked at.
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
    /// Connections that carried an answer and wait for the next request, newest last.
    private let idle = Mutex<[(channel: any Channel, since: NIODeadline)]>([])
    private let opened = Atomic<Int>(0)
    private static let maximumKept = 4
    /// How long a connection is kept unused (the ledger closes its own after `idle_timeout_seconds`).
    private static let maximumIdle: TimeAmount = .seconds(60)

    init(host: String, port: Int, trust: LedgerTrust) {
        self.host = host
        self.port = port
        authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        tls = Result { () throws(LedgerClientError) in try trust.context() }
        pin = trust.pin
    }

    /// How many TLS connections this transport has opened.
    var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Sends one request and collects the answer, on a kept connection if one is open, else on a new one. A
    /// `LedgerClientError` (no trusted TLS, or an answer over 4 MiB) is final; any other error, that the exchange
    /// failed. `headers` are asked for at each send, so that a request sent again is signed anew.
    func exchange(_ method: String, _ path: String, headers: () -> HTTPHeaders, body: [UInt8], timeout: TimeAmount)
        async throws -> (Int, [UInt8])
    {
        let context = try tls.get()
        let deadline = NIODeadline.now() + timeout
        func head() -> HTTPRequestHead {
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path, headers: headers())
            head.headers.replaceOrAdd(name: "Host", value: authority)
            head.headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
            return head
        }
        let body = ByteBuffer(bytes: body)
        if let kept = takeIdle() {
            do {
                return try await send(head(), body, on: kept, deadline: deadline, timeout: timeout)
            } catch is ConnectionClosedUnanswered where !Task.isCancelled {
                // Closed as the request went out: sent again below, on a connection of its own (not when it was
                // the caller, cancelled, that closed it).
            }
        }
        let channel = try await connect(context, deadline: deadline, timeout: timeout)
        return try await send(head(), body, on: channel, deadline: deadline, timeout: timeout)
    }

    /// One exchange on `channel`, closed at `deadline` if the answer has not come; kept afterwards if the server
    /// keeps it open.
    private func send(_ head: HTTPRequestHead, _ body: ByteBuffer, on channel: any Channel, deadline: NIODeadline,
        timeout: TimeAmount) async throws -> (Int, [UInt8])
    {
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        let answer = channel.eventLoop.makePromise(of: LedgerAnswer.self)
        // A request that could not be written (the connection closed after it was taken from the kept ones) is never
        // seen by the handler, which answers everything else: its answer fails here.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in answer.fail(ConnectionClosedUnanswered()) }
        channel.writeAndFlush(LedgerExchange(head: head, body: body, answer: answer), promise: written)
        do {
            // A cancelled caller (a daemon stopping while its standing call is held) closes the connection.
            let received = try await withTaskCancellationHandler {
                try await answer.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
            // An answer that raced that close (the ledger ends the hold it sees closed) is not the gone caller's.
            try Task.checkCancellation()
            if received.keepAlive { keep(channel) } else { channel.close(promise: nil) }
            return (received.status, received.body)
        } catch where NIODeadline.now() >= deadline && !(error is LedgerClientError) {
            // The timer closed the connection: say so rather than how the closing showed.
            throw TimedOut(timeout: timeout)
        } catch LedgerClientError.invalidResponse(let reason) {
            throw LedgerClientError.invalidResponse("\(head.method) \(head.uri): \(reason)")
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// A new TLS connection, its handshake done and the server's key checked against the pin.
    private func connect(_ context: NIOSSLContext, deadline: NIODeadline, timeout: TimeAmount) async throws -> any Channel {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let handshake = loop.makePromise(of: Void.self)
        // No server name for an address: NIO SSL then checks the address against the certificate.
        let serverName = Loopback.isAddress(host) ? nil : host
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                // A daemon's standing call sends nothing for minutes: the kernel's probes, not a timer of the
                // daemon's, find a ledger that went away without closing (a cut link) within some 25 s.
                .channelOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: TCP_KEEPIDLE)), value: 10)
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: TCP_KEEPINTVL)), value: 5)
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: TCP_KEEPCNT)), value: 3)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                        try pipeline.addHandler(HandshakeWatch(handshake))
                        try pipeline.addHTTPClientHandlers()
                        try pipeline.addHandler(ExchangeHandler())
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            handshake.fail(error)  // a name that did not resolve makes no channel to settle it
            throw error
        }
        opened.add(1, ordering: .relaxed)
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        defer { timer.cancel() }
        do {
            do { try await handshake.futureResult.get() } catch { throw Self.tlsFailure(error) ?? error }
            if let pin {
                let presented = try await channel.nioSSL_peerCertificate().get().map(LedgerTrust.pin(of:))
                guard presented == pin else {
                    throw LedgerClientError.tlsFailed(
                        "the ledger's certificate key is not the pinned one (it is sha256/\(Data(presented ?? []).base64EncodedString()))")
                }
            }
            return channel
        } catch {
            channel.close(promise: nil)
            if NIODeadline.now() >= deadline && !(error is LedgerClientError) { throw TimedOut(timeout: timeout) }
            throw error
        }
    }

    /// The newest kept connection still open and not idle too long; the others are closed.
    private func takeIdle() -> (any Channel)? {
        let now = NIODeadline.now()
        let (taken, stale) = idle.withLock { idle -> ((any Channel)?, [any Channel]) in
            var stale: [any Channel] = []
            while let last = idle.popLast() {
                if last.channel.isActive && now - last.since < Self.maximumIdle { return (last.channel, stale) }
                stale.append(last.channel)
            }
            return (nil, stale)
        }
        for channel in stale { channel.close(promise: nil) }
        return taken
    }

    private func keep(_ channel: any Channel) {
        let dropped = idle.withLock { idle -> (any Channel)? in
            idle.append((channel, .now()))
            return idle.count > Self.maximumKept ? idle.removeFirst().channel : nil
        }
        dropped?.close(promise: nil)
    }

    /// An exchange that did not finish by its deadline.
    private struct TimedOut: Error, CustomStringConvertible {
        let timeout: TimeAmount
        var description: String { "no answer within \(timeout.nanoseconds / 1_000_000) ms" }
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
