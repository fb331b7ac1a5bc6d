import NIOCore
import NIOHTTP1
import NIOTLS

/// One request to send on a kept connection, and where its answer goes.
struct LedgerExchange: Sendable {
    let head: HTTPRequestHead
    let body: ByteBuffer
    let answer: EventLoopPromise<LedgerAnswer>
}

/// A complete HTTP/1.1 answer, and whether the connection may carry the next request.
struct LedgerAnswer: Sendable {
    let status: Int
    let body: [UInt8]
    let keepAlive: Bool
}

/// The connection closed before any of the answer came: on a kept connection, most likely the server closing it as
/// idle as the request went out. The request is sent again on a new connection (a POST carries its idempotency key,
/// so the ledger carries it out at most once).
struct ConnectionClosedUnanswered: Error, CustomStringConvertible {
    var description: String { "the connection closed before an answer" }
}

/// Carries one exchange at a time on an HTTP/1.1 connection: writes the request, collects the answer (at most
/// 4 MiB), and fails the waiting request if the connection closes or errs first.
final class ExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = LedgerExchange
    typealias OutboundOut = HTTPClientRequestPart

    static let maximumAnswer = 4 << 20

    private var pending: EventLoopPromise<LedgerAnswer>?
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard pending == nil else {
            exchange.answer.fail(ChannelError.inappropriateOperationForState)
            promise?.fail(ChannelError.inappropriateOperationForState)
            return
        }
        (pending, head, body) = (exchange.answer, nil, context.channel.allocator.buffer(capacity: 0))
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        if exchange.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(exchange.body))), promise: nil)
        }
        context.write(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
        case .body(var chunk):
            guard body.readableBytes + chunk.readableBytes <= Self.maximumAnswer else {
                fail(LedgerClientError.invalidResponse("an answer over 4 MiB"))
                context.close(promise: nil)
                return
            }
            body.writeBuffer(&chunk)
        case .end:
            guard let head, let answer = pending else { return }
            pending = nil
            answer.succeed(LedgerAnswer(status: Int(head.status.code), body: Array(buffer: body), keepAlive: head.isKeepAlive))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(head == nil ? ConnectionClosedUnanswered() : ChannelError.eof)
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error) {
        let answer = pending
        pending = nil
        answer?.fail(error)
    }
}

/// Fulfils a promise when the TLS handshake completes, or fails it with why it did not: an error, the connection
/// closing, or the channel torn down without ever connecting (the network unreachable).
final class HandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
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
