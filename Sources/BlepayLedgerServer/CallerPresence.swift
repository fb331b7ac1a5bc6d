import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Whether the client that sent a connection's request is still there. A client that goes away closes its end; the
/// server allows half-closed connections, so that shows only as `ChannelEvent.inputClosed` in the pipeline, which no
/// route sees. A standing call watches it, so that a daemon that stopped or restarted is not held for the rest of its
/// wait (keeping the connection open and the call counted against the device's `HeldCalls.perDevice`).
final class CallerPresence: Sendable {
    private let state = Mutex<(gone: Bool, onGone: (@Sendable () -> Void)?)>((false, nil))

    var isGone: Bool { state.withLock { $0.gone } }

    /// Runs `body`, cancelling it if the caller goes away meanwhile.
    func whilePresent(_ body: @escaping @Sendable () async -> Void) async {
        let task = Task(operation: body)
        let gone = state.withLock { state in
            if !state.gone { state.onGone = { task.cancel() } }
            return state.gone
        }
        if gone { task.cancel() }
        await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        state.withLock { $0.onGone = nil }
    }

    fileprivate func left() {
        let onGone = state.withLock { state in
            defer { state = (true, nil) }
            return state.onGone
        }
        onGone?()
    }

    /// The caller on `channel`, whose pipeline has a `Watch`.
    static func on(_ channel: any Channel) async throws -> CallerPresence {
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: Watch.self).presence
        }.get()
    }

    /// One per connection, in the pipeline after the HTTP codec.
    final class Watch: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        let presence = CallerPresence()

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? ChannelEvent, event == .inputClosed { presence.left() }
            context.fireUserInboundEventTriggered(event)
        }

        func channelInactive(context: ChannelHandlerContext) {
            presence.left()
            context.fireChannelInactive()
        }
    }
}

/// What a ledger route knows of its request besides the request: the connection it came on.
struct LedgerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
