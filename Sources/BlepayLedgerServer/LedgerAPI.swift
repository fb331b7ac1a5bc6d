import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The request pipeline every route goes through. One request is one storage transaction: authentication (with
/// the nonce it spends), the idempotency check, the operation (in a savepoint, so a refusal undoes only what the
/// operation did) and the stored response commit together or not at all. A replayed POST gets the first answer (an
/// enrollment token it carried withheld: the ledger keeps none in clear).
/// A route's `Anticipation` runs before the transaction, so the one-at-a-time part stays short.
struct LedgerAPI: Sendable {
    typealias Operation = @Sendable (Call, any SQLTransaction) throws -> any Encodable & Sendable

    let storage: any LedgerStorage
    let operations: LedgerOperations
    let adminTokenHash: SHA256Digest
    let watch: ChangeWatch
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    let metrics: LedgerMetrics
    let knownDevices = KnownDevices()
    let heldCalls = HeldCalls()
    static let maximumBody = 1 << 20

    /// The answer to one request: a status and a JSON body.
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var replayed = false
        /// The refusal this answer carries, when the operation ran and refused (not when replayed).
        var refusal: APIError?
        /// What the idempotency record keeps when not `body`: the answer without the credential it carries.
        var kept: [UInt8]?
        /// The record keeps the body sealed: it carries a credential a replay hands back.
        var sealed = false
    }

    /// Answers `request` with `operation`'s result (`success` is its status: 200, or 201 for a creation), after
    /// `anticipate` did what it can before the transaction.
    func respond(to request: Request, parameters: [String: String], access: Access, success: Int = 200,
        anticipate: Anticipate? = nil, operation: @escaping Operation) async -> Response
    {
        let body: [UInt8]
        do {
            body = Array(buffer: try await request.body.collect(upTo: Self.maximumBody))
        } catch {
            return Self.response(APIError(status: 413, code: "request.too-large", "a body is at most 1 MiB"))
        }
        let head = Head(request)
        do {
            let device = try await screen(head, body: body, access: access)
            let anticipated = anticipate.map { $0(body, device?.signingKey) } ?? Anticipation()
            // What anyone may read spends no nonce and keeps no idempotency record: it needs no write transaction
            // (a daemon's probe, every few seconds, must not queue behind payments for the one writer).
            let answering = { @Sendable (tx: any SQLTransaction) in
                try self.answer(head, body: body, parameters: parameters, access: access, success: success,
                    anticipated: anticipated, tx, operation)
            }
            let answer = try await head.method == "GET" && access == .anyone
                ? storage.read(answering) : storage.write(answering)
            if head.method == "POST", answer.status < 300 { await watch.changed() }
            // A refused payment leaves nothing in the books (an acceptance refused for its payer leaves the payment
            // open for another): this line is what remains of the attempt, besides its idempotency record.
            if let refusal = answer.refusal, refusal.paymentError != nil {
                logger.info("refused", metadata: [
                    "method": "\(head.method)", "path": "\(head.path)", "device": "\(head.device ?? "-")",
                    "code": "\(refusal.code)", "message": "\(refusal.message)",
                ])
            }
            return Self.response(answer)
        } catch {
            return Self.response(failure(error, head))
        }
    }

    /// Reads a payment (of the merchant the query names, if any), then, when asked to wait, reads it again as it
    /// changes until its status differs from the one given (or the one first read) or the wait (at most 10 s) runs out.
    func payment(_ request: Request, id: String) async -> Response {
        let head = Head(request)
        let merchant = request.uri.queryParameters.get("merchant").map { String($0) }
        let asked = Double(request.uri.queryParameters.get("wait") ?? "0") ?? 0
        let wait = asked.isNaN ? 0 : min(max(asked, 0), 10)
        do {
            _ = try await screen(head, body: [], access: .device)
            var seen = await watch.changes
            let (principal, first) = try await storage.write { tx in
                let call = try self.authenticate(head, body: [], parameters: [:], access: .device, tx)
                return (call.principal, try self.operations.payment(tx, id: id, merchant: merchant, for: call.principal))
            }
            var payment = first
            let baseline = request.uri.queryParameters.get("status").flatMap { LedgerPayment.Status(rawValue: String($0)) }
                ?? payment.status
            let deadline = ContinuousClock.now + .milliseconds(Int(wait * 1000))
            while payment.status == baseline, ContinuousClock.now < deadline {
                await watch.nextChange(after: seen, before: deadline)
                seen = await watch.changes
                payment = try await storage.read { tx in try self.operations.payment(tx, id: id, merchant: merchant, for: principal) }
            }
            return Self.response(Answer(status: 200, body: try Self.encode(payment)))
        } catch {
            return Self.response(failure(error, head))
        }
    }

    private func answer(_ head: Head, body: [UInt8], parameters: [String: String], access: Access, success: Int,
        anticipated: Anticipation, _ tx: any SQLTransaction, _ operation: Operation) throws -> Answer
    {
        // A device's idempotency record is asked for with its authentication: one wait for both.
        var early: Pending<IdempotencyRecord?>?
        if head.method == "POST", access.resolved(for: head) == .device, let id = head.device,
            let key = try? IdempotencyRecord.validate(head.idempotencyKey)
        {
            early = try operations.idempotencyRecord(tx, principal: Caller.scope(device: id), key: key)
        }
        var call = try authenticate(head, body: body, parameters: parameters, access: access, tx)
        call.anticipated = anticipated
        guard head.method == "POST" else { return try execute(call, success, tx, operation) }
        let key: String
        do { key = try IdempotencyRecord.validate(head.idempotencyKey) } catch { throw APIError(error) }
        let hash = IdempotencyRecord.parametersHash(
            method: head.method, path: head.path, body: body, key: operations.fingerprintKey)
        let stored = try (early ?? operations.idempotencyRecord(tx, principal: call.caller.scope, key: key)).get()
        switch IdempotencyRecord.decide(stored: stored, parametersHash: hash, method: head.method, path: head.path, body: body) {
        case .replay(let status, let response): return Answer(status: status, body: response, replayed: true)
        case .conflict: throw APIError.idempotencyConflict
        case .execute: break
        }
        // A used enrollment token only replays the enrollment that used it.
        if case .enrolling(let token) = call.caller, token.used { throw APIError.enrollmentTokenUsed }
        let answer = try execute(call, success, tx, operation)
        try operations.store(tx, IdempotencyRecord(key: key, parametersHash: hash, status: answer.status,
            response: answer.kept ?? answer.body), principal: call.caller.scope, sealed: answer.sealed, at: call.now)
        return answer
    }

    /// Runs the operation in a savepoint; a refusal becomes its 4xx answer, a storage failure fails the request.
    private func execute(_ call: Call, _ success: Int, _ tx: any SQLTransaction, _ operation: Operation) throws -> Answer {
        do {
            let result = try tx.savepoint { try operation(call, tx) }
            var answer = Answer(status: success, body: try Self.encode(result))
            if let result = result as? any CarriesCredential {
                if let replayed = result.replayed { answer.kept = try Self.encode(replayed) } else { answer.sealed = true }
            }
            return answer
        } catch let error as StorageError {
            throw error
        } catch {
            guard let refusal = APIError(refusal: error) else { throw error }
            return Answer(status: refusal.status, body: try Self.encode(refusal.body), refusal: refusal)
        }
    }

    func authenticate(_ head: Head, body: [UInt8], parameters: [String: String], access: Access,
        _ tx: any SQLTransaction) throws -> Call
    {
        let now = clock()
        let caller: Caller
        switch access.resolved(for: head) {
        case .anyone:
            caller = .anyone
        case .admin:
            guard isAdmin(head) else { throw APIError.unauthenticated }
            caller = .admin
        case .enrollment:
            guard let token = head.bearer else { throw APIError.unauthenticated }
            caller = .enrolling(try operations.enrollmentToken(tx, token, at: now))
        case .device, .deviceOrAdmin:
            guard let id = head.device else { throw APIError.unauthenticated }
            // The screen checked the nonce with the device as it knew it: spent with the device's read, in one wait,
            // and checked again once the device is read (the whole transaction is undone if it fails).
            let known = try operations.device(tx, id: id)
            let spent = try head.nonce.map { nonce in try operations.spendNonce(tx, device: id, nonce: nonce, at: now) }
            guard let device = try known.get() else { throw APIError.unauthenticated }
            do {
                let nonce = try verifiedNonce(head, body: body, device: device, at: now)
                guard nonce == head.nonce, try spent?.get() == true else { throw RequestAuthentication.Failure(.reusedNonce) }
                knownDevices.remember(device)
            } catch let failure as RequestAuthentication.Failure {
                throw APIError(failure)
            }
            // Told only to the device itself: its request is signed with its secret.
            if device.revoked { throw APIError.deviceRevoked }
            if device.accountBlocked { throw APIError.accountBlocked }
            caller = .device(device)
        }
        return Call(caller: caller, body: body, parameters: parameters, queries: head.queries, now: now)
    }

    func failure(_ error: any Error, _ head: Head) -> APIError {
        if let refusal = APIError(refusal: error) { return refusal }
        if let error = error as? StorageError {
            logger.error("storage failed", metadata: ["method": "\(head.method)", "path": "\(head.path)", "error": "\(error)"])
            return APIError(status: 503, code: error.code.rawValue, "the ledger's database is unavailable; retry later")
        }
        logger.error("request failed", metadata: ["method": "\(head.method)", "path": "\(head.path)", "error": "\(error)"])
        return APIError(status: 500, code: "internal", "the ledger failed to answer")
    }

    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    static func response(_ error: APIError) -> Response {
        response(Answer(status: error.status, body: (try? encode(error.body)) ?? []))
    }

    static func response(_ answer: Answer) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if answer.replayed { headers[HTTPField.Name("Idempotent-Replayed")!] = "true" }
        return Response(status: .init(code: answer.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

extension APIError {
    /// A refusal by the ledger's rules or of the input, as opposed to a failure of the ledger itself.
    init?(refusal error: any Error) {
        switch error {
        case let error as APIError: self = error
        case let error as ValidationError: self.init(error)
        case let error as LedgerError: self.init(error)
        case let error as DecodingError: self.init(error)
        default: return nil
        }
    }
}

/// What authentication and idempotency read from a request's head.
struct Head: Sendable {
    let method: String
    /// The path with its query, as the client signed it.
    let path: String
    let bearer: String?
    let device: String?
    let timestamp: Int64?
    let nonce: String?
    let signature: String?
    let idempotencyKey: String?
    let queries: [String: String]

    init(_ request: Request) {
        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { request.headers[$0] } }
        method = request.method.rawValue
        path = request.uri.description
        let authorization = request.headers[.authorization]
        bearer = authorization.flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        device = header(RequestAuthentication.deviceHeader)
        timestamp = header(RequestAuthentication.timestampHeader).flatMap { Int64($0) }
        nonce = header(RequestAuthentication.nonceHeader)
        signature = header(RequestAuthentication.signatureHeader)
        idempotencyKey = header("Idempotency-Key")
        queries = Dictionary(request.uri.queryParameters.map { (String($0.key), String($0.value)) }) { first, _ in first }
    }
}
