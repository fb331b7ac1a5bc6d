import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The ledger's HTTP server and the services beside it, as one service: the router behind HummingbirdCore's server.
/// Hummingbird's `Application` would also run a timer that formats the `Date` header every second, the only thing
/// that woke an idle ledger; here the header is formatted when a response needs it and the second has changed.
struct LedgerHTTPService: Service {
    let server: HTTPServerBuilder
    let configuration: ServerConfiguration
    let responder: RouterResponder<LedgerRequestContext>
    let services: [any Service]
    let onServerRunning: @Sendable (any Channel) async -> Void
    let logger: Logger

    func run() async throws {
        let date = HTTPDate()
        let (serverName, logger, responder) = (configuration.serverName, logger, responder)
        let server = try server.buildServer(
            configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger
        ) { request, writer, channel in
            var response: Response
            do {
                response = try await responder.respond(
                    to: request, context: LedgerRequestContext(source: .init(channel: channel, logger: logger)))
            } catch let error as HTTPParserError {
                throw error
            } catch {
                logger.debug("unrecognised error", metadata: ["error": "\(error)"])
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = date.now
            if let serverName { response.headers[.server] = serverName }
            try await writer.write(response: response.head, body: response.body)
        } onServerRunning: { channel in
            await onServerRunning(channel)
        }
        try await ServiceGroup(configuration: .init(services: services + [server], logger: logger)).run()
    }
}

/// The `Date` header's value (RFC 9110's IMF-fixdate), formatted at most once a second.
final class HTTPDate: Sendable {
    private let cached = Mutex<(second: time_t, text: String)>((-1, ""))

    var now: String {
        let second = time(nil)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, Self.text(for: second)) }
            return cached.text
        }
    }

    static func text(for second: time_t) -> String {
        var second = second
        var parts = tm()
        gmtime_r(&second, &parts)
        var text = [CChar](repeating: 0, count: 32)
        // strftime's names are the C locale's, which the ledger never changes: English, as the header wants.
        let length = strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: text.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
