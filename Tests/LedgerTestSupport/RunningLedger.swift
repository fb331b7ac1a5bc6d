import AsyncHTTPClient
import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayLedgerStore
import BlepayProtocol
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// A real ledger server on a free loopback port over a fresh database of `kind`, over HTTPS when started with a
/// certificate, with clients for the operator and helpers that enroll merchants and customers through the API.
public final class RunningLedger: Sendable {
    public let server: LedgerServer
    public let storage: TestStorage
    public let baseURL: String
    /// What the clients trust: the CA of the certificate the ledger serves, if any.
    public let trust: LedgerTrust
    public let admin: LedgerClient
    public let stateDirectory: String
    public var port: Int { configuration.port }
    private let configuration: LedgerConfiguration
    private let running: Mutex<(group: ServiceGroup, task: Task<Void, any Error>)>

    /// With `tls`, the ledger serves that certificate, and its clients trust `authority`. `configure` changes the
    /// configuration before the server starts; `wrap` puts something around the storage the server uses (to watch it).
    public static func start(_ kind: StorageKind,
        tls: (authority: TestCertificateAuthority, certificate: TestCertificateAuthority.Issued)? = nil,
        configure: (inout LedgerConfiguration) -> Void = { _ in },
        wrap: (any LedgerStorage) -> any LedgerStorage = { $0 }) async throws -> RunningLedger
    {
        let storage = try await makeStorage(kind)
        var configuration = LedgerConfiguration()
        configuration.port = 0
        configuration.tlsCertificateFile = tls?.certificate.certificateFile
        configuration.tlsKeyFile = tls?.certificate.keyFile
        configuration.expiryIntervalSeconds = 1
        configuration.stateDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("blepay-ledger-\(UUID().uuidString)").path
        configure(&configuration)
        let (server, port, running) = try await serve(configuration, wrap(storage.storage))
        configuration.port = port
        return RunningLedger(server: server, storage: storage, configuration: configuration, running: running,
            adminToken: try LedgerServer.adminToken(configuration), trust: LedgerTrust(caFile: tls?.authority.caFile))
    }

    /// A ledger over a `WatchedStorage`, returned beside it: to count its write transactions, or to take its
    /// database away.
    public static func watched(_ kind: StorageKind, configure: (inout LedgerConfiguration) -> Void = { _ in })
        async throws -> (RunningLedger, WatchedStorage)
    {
        let watched = Mutex<WatchedStorage?>(nil)
        let ledger = try await start(kind, configure: configure) { storage in
            let wrapper = WatchedStorage(storage)
            watched.withLock { $0 = wrapper }
            return wrapper
        }
        guard let storage = watched.withLock({ $0 }) else { preconditionFailure("start wraps the storage it serves") }
        return (ledger, storage)
    }

    /// A server over `storage`, listening; the port it listens on.
    private static func serve(_ configuration: LedgerConfiguration, _ storage: any LedgerStorage) async throws
        -> (LedgerServer, Int, (group: ServiceGroup, task: Task<Void, any Error>))
    {
        let server = try LedgerServer(configuration: configuration, storage: storage, logger: testLogger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = try server.application(configurationFile: "ledger.toml", logger: testLogger) { port in
            continuation.yield(port)
        }
        let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], logger: testLogger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return (server, port, (group, task))
    }

    private init(server: LedgerServer, storage: TestStorage, configuration: LedgerConfiguration,
        running: (group: ServiceGroup, task: Task<Void, any Error>), adminToken: String, trust: LedgerTrust)
    {
        self.server = server
        self.storage = storage
        self.configuration = configuration
        self.running = Mutex(running)
        stateDirectory = configuration.stateDirectory
        baseURL = "\(configuration.servesTLS ? "https" : "http")://127.0.0.1:\(configuration.port)"
        self.trust = trust
        admin = LedgerClient(baseURL: baseURL, credentials: .bearer(adminToken), retry: .init(attempts: 1), trust: trust,
            logger: testLogger)
    }

    /// The ledger is down while `body` runs (nothing listens on its port), then back on the same port, with the same
    /// books and keys.
    public func down<T>(_ body: () async throws -> T) async throws -> T {
        try await halt()
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        let (_, _, restarted) = try await Self.serve(configuration, storage.storage)
        running.withLock { $0 = restarted }
        return try result.get()
    }

    public func stop() async throws {
        try await halt()
        try await storage.destroy()
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    private func halt() async throws {
        let (group, task) = running.withLock { $0 }
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Runs `body` against a fresh ledger and always cleans up.
    public static func with(_ kind: StorageKind,
        tls: (authority: TestCertificateAuthority, certificate: TestCertificateAuthority.Issued)? = nil,
        configure: (inout LedgerConfiguration) -> Void = { _ in },
        _ body: (RunningLedger) async throws -> Void) async throws
    {
        try await start(kind, tls: tls, configure: configure).stopped(after: body)
    }

    /// Runs `body` with a ledger over a `WatchedStorage`, then stops the ledger, whether `body` threw or not.
    public static func withWatched(_ kind: StorageKind, configure: (inout LedgerConfiguration) -> Void = { _ in },
        _ body: (RunningLedger, WatchedStorage) async throws -> Void) async throws
    {
        let (ledger, storage) = try await watched(kind, configure: configure)
        try await ledger.stopped { try await body($0, storage) }
    }

    private func stopped(after body: (RunningLedger) async throws -> Void) async throws {
        do { try await body(self) } catch {
            try await stop()
            throw error
        }
        try await stop()
    }

    // MARK: parties

    public struct Party: Sendable {
        public let account: AccountResource
        public let device: DeviceResource
        public let key: SigningKey
        public let client: LedgerClient
        public var instrument: InstrumentResource?
    }

    public func merchant(_ name: String = "Café") async throws -> Party {
        let account = try await admin.createAccount(CreateAccount(kind: .merchant, name: name))
        let key = SigningKey()
        let noise = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let device = try await admin.with(.bearer(account.enrollmentToken!)).enroll(
            RegisterDevice(name: "till", signingKey: key.publicKey.bytes.hex, noiseKey: noise.hex))
        return Party(account: account, device: device, key: key, client: client(device), instrument: nil)
    }

    /// A customer with a card holding `balance` minor units.
    public func customer(balance: Int64, currency: String = "EUR") async throws -> Party {
        let account = try await admin.createAccount(CreateAccount(kind: .customer, name: "Alice"))
        let key = SigningKey()
        let device = try await admin.with(.bearer(account.enrollmentToken!)).enroll(
            RegisterDevice(name: "phone", signingKey: key.publicKey.bytes.hex, noiseKey: nil))
        var party = Party(account: account, device: device, key: key, client: client(device), instrument: nil)
        let card = try await party.client.addInstrument(CreateInstrument(card: .init(
            number: "4242424242424242", expiryMonth: 12,
            expiryYear: Calendar(identifier: .gregorian).component(.year, from: Date()) + 3, cvc: "123")))
        party.instrument = balance > 0 ? try await admin.deposit(Deposit(amount: balance, currency: currency), into: card.id) : card
        return party
    }

    public func client(_ device: DeviceResource) -> LedgerClient {
        LedgerClient(baseURL: baseURL, credentials: .device(id: device.id, secret: SymmetricKey(data: Data(base64Encoded: device.secret!)!)),
            retry: .init(attempts: 1), trust: trust, logger: testLogger)
    }

    // MARK: signed messages

    /// A request signed by `merchant`, for the payment id `id` (a random one by default).
    public func request(by merchant: Party, id: PaymentID? = nil, amount: UInt64, currency: String = "EUR",
        expiresIn: UInt64 = 120_000, online: Bool = true, createdAt: Timestamp? = nil) throws -> PaymentRequest
    {
        let now = createdAt ?? LedgerServer.systemClock()
        return try PaymentRequest(
            paymentID: id ?? PaymentID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) }),
            amount: Money(minorUnits: amount, currency: Currency(currency)), reference: "order-1",
            merchantID: merchant.account.id, merchantName: merchant.account.name, createdAt: now,
            expiresAt: now.adding(milliseconds: expiresIn), businessOnline: online, signature: .unsigned
        ).signed(by: merchant.key)
    }

    public func acceptance(of request: PaymentRequest, by customer: Party, tip: UInt64 = 0, amount: UInt64? = nil,
        preAuthorization: PreAuthorizationPresentation? = nil, signer: SigningKey? = nil) throws -> PaymentAcceptance
    {
        let signer = signer ?? customer.key
        return try PaymentAcceptance(
            paymentID: request.paymentID, amount: Money(minorUnits: amount ?? request.amount.minorUnits, currency: request.amount.currency),
            tipMinorUnits: tip, instrumentID: customer.instrument!.id, delegatedInstrument: false,
            createdAt: LedgerServer.systemClock(), requestHash: request.hash, sessionHash: Hash32(Array(repeating: 5, count: 32)),
            customerKey: signer.publicKey, preAuthorization: preAuthorization, signature: .unsigned
        ).signed(by: signer)
    }

    // MARK: raw HTTP

    public struct RawAnswer: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: [UInt8]
        public var error: ErrorBody.Detail? { try? JSONDecoder().decode(ErrorBody.self, from: Data(body)).error }
    }

    /// One request exactly as given, to a ledger started without TLS: for the tests of authentication and of bad input.
    public func raw(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> RawAnswer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return RawAnswer(status: Int(response.status.code), headers: response.headers,
            body: Array(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// Headers of a request signed by `device` (or altered, to be refused).
    public func signed(_ method: String, _ path: String, body: [UInt8], device: DeviceResource, timestamp: Int64? = nil,
        nonce: String = UUID().uuidString, idempotencyKey: String? = UUID().uuidString) -> [(String, String)]
    {
        let timestamp = timestamp ?? Int64(Date().timeIntervalSince1970)
        let secret = SymmetricKey(data: Data(base64Encoded: device.secret!)!)
        var headers = [
            (RequestAuthentication.deviceHeader, device.id), (RequestAuthentication.timestampHeader, "\(timestamp)"),
            (RequestAuthentication.nonceHeader, nonce),
            (RequestAuthentication.signatureHeader,
             RequestAuthentication.sign(
                method: method, path: path, timestamp: timestamp, nonce: nonce, idempotencyKey: idempotencyKey, body: body,
                secret: secret)),
        ]
        if let idempotencyKey { headers.append(("Idempotency-Key", idempotencyKey)) }
        return headers
    }
}
