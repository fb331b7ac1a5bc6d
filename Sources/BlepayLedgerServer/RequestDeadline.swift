import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request, once its head arrived, is not received whole within `limit`. The server's idle
/// timeout bounds the wait for a head (a head only counts once complete); this bounds a body sent slowly. Together
/// they keep a half-sent request from holding one of the ledger's connections for longer than a few seconds.
final class RequestDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let limit: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limit: TimeAmount) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(in: limit) { channel.close(promise: nil) }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline?.cancel() }
}
