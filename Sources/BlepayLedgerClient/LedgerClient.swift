import AsyncHTTPClient
import BlepayConfiguration
import BlepayLedger
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// A connection to one ledger, over HTTPS unless it is on this machine (`LedgerTrust` says which servers are
/// believed). Device calls are HMAC-signed (`RequestAuthentication`); the operator's and enrollment calls carry a
/// bearer token. Every attempt is signed anew (fresh timestamp and nonce) but a POST keeps its idempotency key
/// across attempts, so the ledger carries it out at most once.
public struct LedgerClient: Sendable {
    public enum Credentials: Sendable {
        case none
        case bearer(String)
        case device(id: String, secret: SymmetricKey)
    }

    /// How often and how long to retry a request that failed without an answer (or with a 5xx).
    public struct RetryPolicy: Sendable {
        public var attempts: Int
        public var firstDelay: Duration
        /// Each attempt's.
        public var timeout: TimeAmount
        /// All attempts' and the waits between them, when set: no attempt starts or lasts past it.
        public var total: Duration?

        public init(attempts: Int = 4, firstDelay: Duration = .milliseconds(200), timeout: TimeAmount = .seconds(15),
            total: Duration? = nil)
        {
            self.attempts = attempts
            self.firstDelay = firstDelay
            self.timeout = timeout
            self.total = total
        }
    }

    public let baseURL: String
    public let credentials: Credentials
    public let keys: IdempotencyKeyStore?
    public var retry: RetryPolicy
    /// What carries a loopback `http://` ledger's requests (pooled connections).
    let http: HTTPClient
    /// What carries an `https://` ledger's requests; nil for `http://`.
    let tls: LedgerTransport?
    /// The ledger's host, without an IPv6 address's brackets.
    let host: String
    let logger: Logger

    /// `keys` is where POSTs keep their idempotency keys; without it each POST gets a key in memory only. `trust`
    /// says which certificates an `https://` ledger may present.
    public init(baseURL: String, credentials: Credentials, keys: IdempotencyKeyStore? = nil, retry: RetryPolicy = .init(),
        trust: LedgerTrust = .init(), http: HTTPClient = LedgerClient.loopback, logger: Logger)
    {
        let baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let url = URL(string: baseURL)
        var host = url?.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let tls = url?.scheme?.lowercased() == "https" ? LedgerTransport(host: host, port: url?.port ?? 443, trust: trust) : nil
        self.init(baseURL: baseURL, credentials: credentials, keys: keys, retry: retry, http: http, tls: tls, host: host,
            logger: logger)
    }

    private init(baseURL: String, credentials: Credentials, keys: IdempotencyKeyStore?, retry: RetryPolicy,
        http: HTTPClient, tls: LedgerTransport?, host: String, logger: Logger)
    {
        self.baseURL = baseURL
        self.credentials = credentials
        self.keys = keys
        self.retry = retry
        self.http = http
        self.tls = tls
        self.host = host
        self.logger = logger
    }

    /// What carries requests to a loopback `http://` ledger by default. A refused connection fails the request at
    /// once, for the client's own retry policy to decide on, rather than being retried by the pool until the request's
    /// deadline (minutes away for a standing call): a stopped ledger is noticed as it stops. No redirect is followed.
    public static let loopback: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: .seconds(3)), decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// A client of the same ledger with other credentials.
    public func with(_ credentials: Credentials) -> LedgerClient {
        LedgerClient(baseURL: baseURL, credentials: credentials, keys: keys, retry: retry, http: http, tls: tls, host: host,
            logger: logger)
    }

    /// A client of the same ledger that tries each request once, for at most `timeoutSeconds`: for probes.
    public func once(timeoutSeconds: Int64) -> LedgerClient {
        LedgerClient(
            baseURL: baseURL, credentials: credentials, keys: keys,
            retry: RetryPolicy(attempts: 1, firstDelay: retry.firstDelay, timeout: .seconds(timeoutSeconds)), http: http,
            tls: tls, host: host, logger: logger)
    }

    /// A client of the same ledger whose requests, retries included, end within `seconds`: for what a person waits
    /// on through the control API, which must answer (`ledger-offline` at worst) before the call times out.
    public func answering(within seconds: Int64) -> LedgerClient {
        var retry = self.retry
        retry.total = .seconds(seconds)
        return LedgerClient(baseURL: baseURL, credentials: credentials, keys: keys, retry: retry, http: http, tls: tls,
            host: host, logger: logger)
    }

    /// How many TLS connections this client, and every client made from it by `with` and `once`, opened: each
    /// carries request after request while the ledger keeps it open.
    public var connectionsOpened: Int { tls?.connectionsOpened ?? 0 }

    /// GET `path` as `T`.
    public func get<T: Decodable>(_ path: String, as _: T.Type = T.self) async throws(LedgerClientError) -> T {
        try await send("GET", path, body: [], idempotencyKey: nil)
    }

    /// POST `body` to `path`. `operation` names the logical operation for the key store (the same operation
    /// retried later reuses its key); the key is forgotten once the ledger gave a final answer (a success or a
    /// refusal; not a failure to answer, nor a call given up), unless `keepingKey`
    /// (the caller forgets it once it has kept the answer). `idempotencyKey`, if given, is the key itself: one the
    /// caller names, so that its own retries, even after a final answer, are the same operation.
    public func post<T: Decodable>(
        _ path: String, _ body: some Encodable, operation: String? = nil, keepingKey: Bool = false,
        idempotencyKey: String? = nil, as _: T.Type = T.self
    ) async throws(LedgerClientError) -> T {
        let bytes: [UInt8]
        do { bytes = try Self.encode(body) } catch {
            throw .invalidResponse("cannot encode the request: \(error)")
        }
        let key: String
        do {
            key = try idempotencyKey ?? operation.flatMap { try keys?.key(for: $0) } ?? UUID().uuidString.lowercased()
        } catch {
            throw .unavailable("cannot keep the idempotency key: \(error)")
        }
        let result: T
        do {
            result = try await send("POST", path, body: bytes, idempotencyKey: key)
        } catch {
            // A refusal is as final as a success: the same operation asked again later is asked anew (a card
            // topped up since may pay), and its key does not stay on disk for good.
            if case .refused = error, let operation, !keepingKey { keys?.forget(operation) }
            throw error
        }
        if let operation, !keepingKey { keys?.forget(operation) }
        return result
    }

    /// The same body always encodes to the same bytes, so a retry, even by a restarted daemon, carries the
    /// parameters its idempotency key was first used with.
    public static func encode(_ body: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(body))
    }

    func send<T: Decodable>(_ method: String, _ path: String, body: [UInt8], idempotencyKey: String?)
        async throws(LedgerClientError) -> T
    {
        var delay = retry.firstDelay
        var lastFailure = "no attempt"
        let deadline = retry.total.map { ContinuousClock.now + $0 }
        for attempt in 1...max(retry.attempts, 1) {
            if attempt > 1 {
                // A cancelled caller has gone: another attempt would only fail the same way at once.
                if Task.isCancelled { break }
                if let deadline, ContinuousClock.now + delay >= deadline { break }
                try? await Task.sleep(for: delay)
                delay *= 2
            }
            var timeout = retry.timeout
            if let deadline {
                let (seconds, attoseconds) = (deadline - ContinuousClock.now).components
                timeout = min(timeout, .nanoseconds(max(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, 1)))
            }
            let status: Int
            let answer: [UInt8]
            do {
                (status, answer) = try await exchange(method, path, body: body, idempotencyKey: idempotencyKey, timeout: timeout)
                tls?.report(nil, logger: logger)
            } catch let error as LedgerClientError {
                // No trusted connection (nothing was sent), a secret refused before sending, or an answer too large:
                // another attempt would meet the same certificate, configuration or answer.
                tls?.report(error, logger: logger)
                throw error
            } catch {
                if Task.isCancelled { break }
                lastFailure = "\(error)"
                logger.debug("ledger request failed", metadata: ["path": "\(path)", "attempt": "\(attempt)", "error": "\(error)"])
                continue
            }
            switch status {
            case 200..<300:
                do { return try JSONDecoder().decode(T.self, from: Data(answer)) } catch {
                    throw .invalidResponse("\(method) \(path): \(error)")
                }
            case 500...:
                lastFailure = "HTTP \(status)"
                continue
            default:
                guard let refusal = try? JSONDecoder().decode(ErrorBody.self, from: Data(answer)) else {
                    throw .invalidResponse("\(method) \(path): HTTP \(status) without an error body")
                }
                throw .refused(status: status, refusal.error)
            }
        }
        if Task.isCancelled { throw .cancelled("\(method) \(path)") }
        throw .unavailable("\(method) \(path): \(lastFailure)")
    }

    private func exchange(_ method: String, _ path: String, body: [UInt8], idempotencyKey: String?, timeout: TimeAmount)
        async throws -> (Int, [UInt8])
    {
        // Whatever the configuration said: a token or a card goes to another machine over TLS or not at all.
        guard tls != nil || Loopback.contains(host) || !carriesSecrets(method, path) else {
            throw LedgerClientError.insecureTransport("\(method) \(path) to \(host) over plain HTTP")
        }
        // Signed anew for each send: a request sent again on a new connection carries a fresh timestamp and nonce.
        let headers = { [credentials] () -> HTTPHeaders in
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            if let idempotencyKey { headers.add(name: "Idempotency-Key", value: idempotencyKey) }
            switch credentials {
            case .none: break
            case .bearer(let token): headers.add(name: "Authorization", value: "Bearer \(token)")
            case .device(let id, let secret):
                let timestamp = Int64(Date().timeIntervalSince1970)
                let nonce = UUID().uuidString.lowercased()
                headers.add(name: RequestAuthentication.deviceHeader, value: id)
                headers.add(name: RequestAuthentication.timestampHeader, value: "\(timestamp)")
                headers.add(name: RequestAuthentication.nonceHeader, value: nonce)
                headers.add(name: RequestAuthentication.signatureHeader, value: RequestAuthentication.sign(
                    method: method, path: path, timestamp: timestamp, nonce: nonce, idempotencyKey: idempotencyKey, body: body,
                    secret: secret))
            }
            return headers
        }
        if let tls { return try await tls.exchange(method, path, headers: headers, body: body, timeout: timeout) }
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers = headers()
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await http.execute(request, timeout: timeout)
        let answer = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), Array(buffer: answer))
    }

    /// Whether a request carries what must never cross a network in clear: a bearer token (the operator's, or an
    /// enrollment token) or a card (number and CVC).
    private func carriesSecrets(_ method: String, _ path: String) -> Bool {
        if case .bearer = credentials { return true }
        return method == "POST" && path == "/v1/instruments"
    }
}
