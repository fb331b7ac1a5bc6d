import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// `GET /metrics` in Prometheus's text format on a loopback port, for a process that serves no HTTP of its own (the
/// daemons). Loopback only: what a daemon counts is for the host's own scraper, or one it forwards to on purpose.
public struct MetricsEndpoint: Service, CustomStringConvertible {
    let channel: any Channel
    let address: String
    let logger: Logger
    public var description: String { "MetricsEndpoint" }

    /// Listens on the port at once, so that a port another process holds stops the daemon before it tells systemd
    /// it is ready; `run` serves what the listener accepts.
    public static func bind(port: Int, registry: PrometheusCollectorRegistry, logger: Logger) async throws -> MetricsEndpoint {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(MetricsHandler(registry: registry))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        return MetricsEndpoint(channel: channel, address: "http://127.0.0.1:\(port)/metrics", logger: logger)
    }

    public func run() async throws {
        logger.info("metrics served", metadata: ["address": "\(address)"])
        // A future's wait is not cancellable: the shutdown closes the channel, which ends it.
        try? await withGracefulShutdownHandler {
            try await channel.closeFuture.get()
        } onGracefulShutdown: {
            channel.close(promise: nil)
        }
    }
}

/// Answers `GET /metrics` with the registry's text; anything else 404, every answer closing the connection.
private final class MetricsHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let registry: PrometheusCollectorRegistry
    private var head: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            let found = head.method == .GET && head.uri.split(separator: "?").first == "/metrics"
            var body = context.channel.allocator.buffer(capacity: 0)
            if found { body.writeBytes(registry.emitToBuffer()) } else { body.writeString("not found\n") }
            var headers = HTTPHeaders([
                ("Content-Type", found ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain"),
                ("Content-Length", "\(body.readableBytes)"), ("Connection", "close"),
            ])
            headers.replaceOrAdd(name: "Cache-Control", value: "no-store")
            let status: HTTPResponseStatus = found ? .ok : .notFound
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
            self.head = nil
        }
    }
}
