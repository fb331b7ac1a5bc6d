import BlepayLedger
import BlepayProtocol
import Crypto
import Foundation

/// The API's calls, typed. Paths and bodies are `docs/ledger-openapi.yaml`'s.
extension LedgerClient {
    public func ledgerKey() async throws(LedgerClientError) -> LedgerKeyResource { try await get("/v1/ledger-key") }

    /// Every published ledger key (active, next, retired), with its status.
    public func ledgerKeys() async throws(LedgerClientError) -> [LedgerKeyResource] {
        try await get("/v1/ledger-keys", as: LedgerKeyList.self).keys
    }

    // The operator (bearer: the admin token).
    public func createAccount(_ body: CreateAccount) async throws(LedgerClientError) -> AccountResource {
        try await post("/v1/accounts", body)
    }

    public func account(_ id: String) async throws(LedgerClientError) -> AccountResource {
        try await get("/v1/accounts/\(id)")
    }

    public func deposit(_ body: Deposit, into instrument: String) async throws(LedgerClientError) -> InstrumentResource {
        try await post("/v1/instruments/\(instrument)/deposits", body)
    }

    public func block(_ instrument: String, _ blocked: Bool = true) async throws(LedgerClientError) -> InstrumentResource {
        try await post("/v1/instruments/\(instrument)/\(blocked ? "block" : "unblock")", Empty())
    }

    /// The double spends the ledger refused, with their proofs.
    public func doubleSpends() async throws(LedgerClientError) -> [DoubleSpendResource] {
        try await get("/v1/double-spends", as: DoubleSpendList.self).doubleSpends
    }

    // Enrollment (bearer: the account's enrollment token).
    /// Registers the device. Its idempotency key is kept until `enrolled(_:)`: the answer carries the device's only
    /// copy of its request secret, so an enrollment retried after a stop before the credentials were stored must be
    /// answered with the device it created.
    public func enroll(_ body: RegisterDevice) async throws(LedgerClientError) -> DeviceResource {
        try await post("/v1/devices", body, operation: Self.enrollment(body), keepingKey: true)
    }

    /// The credentials `enroll(body)` returned are stored: its idempotency key is no longer needed.
    public func enrolled(_ body: RegisterDevice) { keys?.forget(Self.enrollment(body)) }

    private static func enrollment(_ body: RegisterDevice) -> String { "enroll-\(body.signingKey)" }

    // Devices (HMAC-signed).
    public func ownAccount() async throws(LedgerClientError) -> AccountResource { try await get("/v1/account") }

    /// Adds an instrument. The same instrument added again while the first try's answer never came is the same
    /// operation (its key kept until the ledger answers), so the ledger answers with the instrument it made instead
    /// of making a second.
    public func addInstrument(_ body: CreateInstrument) async throws(LedgerClientError) -> InstrumentResource {
        guard case .device(_, let secret) = credentials else { return try await post("/v1/instruments", body) }
        return try await post("/v1/instruments", body, operation: Self.operation(adding: body, secret: secret))
    }

    /// The operation an instrument's addition is kept under: named by a hash of the body keyed with the device's
    /// secret, so that the key file's name says nothing of the card.
    public static func operation(adding body: CreateInstrument, secret: SymmetricKey) -> String {
        let bytes = (try? encode(body)) ?? []
        return "instrument-" + Array(HMAC<SHA256>.authenticationCode(for: bytes, using: secret)).prefix(16).hex
    }

    public func instruments() async throws(LedgerClientError) -> [InstrumentResource] {
        try await get("/v1/instruments", as: InstrumentList.self).instruments
    }

    public func createPayment(_ request: PaymentRequest) async throws(LedgerClientError) -> PaymentResource {
        try await post("/v1/payments", CreatePayment(request: Self.base64(request.encoded)),
            operation: "create-\(request.paymentID)")
    }

    /// Executes with the customer's acceptance; `request` lets the ledger create the payment if the business never
    /// reached it. Each acceptance is its own operation: after one payer is refused, another's is a new request.
    public func accept(_ acceptance: PaymentAcceptance, request: PaymentRequest?) async throws(LedgerClientError)
        -> PaymentResource
    {
        try await post("/v1/payments/\(acceptance.paymentID)/acceptance",
            AcceptPayment(acceptance: Self.base64(acceptance.encoded), request: request.map { Self.base64($0.encoded) }),
            operation: "accept-\(acceptance.paymentID)-\(acceptance.signature.bytes.prefix(8).hex)")
    }

    /// Cancels a payment; with its request, also one the ledger has not seen, so that nobody can pay it later.
    public func cancelPayment(_ id: PaymentID, request: PaymentRequest? = nil) async throws(LedgerClientError) -> PaymentResource {
        try await post("/v1/payments/\(id)/cancel", PaymentCancellation(request: request.map { Self.base64($0.encoded) }),
            operation: "cancel-\(id)")
    }

    /// The payment; with `waitingWhile`, the ledger holds the answer (up to `seconds`, at most 10) while the status
    /// is still that one. `merchant` names whose payment of `id` it is, for a customer who paid that id at several.
    public func payment(_ id: PaymentID, merchant: String? = nil, waitingWhile status: LedgerPayment.Status? = nil,
        seconds: Int = 10) async throws(LedgerClientError) -> PaymentResource
    {
        let query = (merchant.map { ["merchant=\($0)"] } ?? [])
            + (status.map { ["status=\($0.rawValue)", "wait=\(min(seconds, 10))"] } ?? [])
        return try await get("/v1/payments/\(id)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
    }

    /// The payments of this device's account (a merchant's, or those a customer paid), newest first, a page at a
    /// time: pass the page's `nextCursor` for the next one. `from` (inclusive) and `to` (exclusive) are milliseconds
    /// since 1970, on an online payment's creation or an offline one's settlement.
    public func payments(from: UInt64? = nil, to: UInt64? = nil, status: LedgerPayment.Status? = nil, limit: Int = 50,
        cursor: String? = nil) async throws(LedgerClientError) -> PaymentPage
    {
        let query = (from.map { ["from=\($0)"] } ?? []) + (to.map { ["to=\($0)"] } ?? [])
            + (status.map { ["status=\($0.rawValue)"] } ?? []) + ["limit=\(limit)"] + (cursor.map { ["cursor=\($0)"] } ?? [])
        return try await get("/v1/payments?" + query.joined(separator: "&"))
    }

    /// Moves `body`'s limit into escrow for a voucher. Its idempotency key is kept until `preAuthorizationAnswered(_:)`:
    /// a voucher whose answer was lost, or that the device stopped before keeping, held the limit in escrow until it
    /// expired while the next try took another; the same request made again is answered with it instead.
    public func createPreAuthorization(_ body: CreatePreAuthorization) async throws(LedgerClientError)
        -> PreAuthorizationResource
    {
        try await post("/v1/pre-authorizations", body, operation: Self.preAuthorization(body), keepingKey: true)
    }

    /// The answer to `createPreAuthorization(body)` is final here (the voucher kept, or a refusal): the same request
    /// made again is a new one.
    public func preAuthorizationAnswered(_ body: CreatePreAuthorization) { keys?.forget(Self.preAuthorization(body)) }

    private static func preAuthorization(_ body: CreatePreAuthorization) -> String {
        "pre-authorize-\(body.instrumentId)-\(body.amount)-\(body.currency)-\(body.lifetimeSeconds)"
    }

    public func preAuthorization(_ id: String) async throws(LedgerClientError) -> PreAuthorizationResource {
        try await get("/v1/pre-authorizations/\(id)")
    }

    public func voidPreAuthorization(_ id: String) async throws(LedgerClientError) -> PreAuthorizationResource {
        try await post("/v1/pre-authorizations/\(id)/void", Empty(), operation: "void-\(id)")
    }

    /// Settles offline payments; the batch's operation name keeps its key across retries.
    public func settle(_ items: [(PaymentRequest, PaymentAcceptance)], operation: String) async throws(LedgerClientError)
        -> SettlementResults
    {
        let batch = SettlementBatch(items: items.map { request, acceptance in
            SettlementBatch.Item(request: Self.base64(request.encoded), acceptance: Self.base64(acceptance.encoded))
        })
        return try await post("/v1/settlements", batch, operation: operation)
    }

    /// Refunds `body.amount` of a settled payment (the rest not yet refunded without one); the operation name keeps
    /// its idempotency key across retries, so a refund retried after a lost answer is made once.
    /// Refunds a payment of this business device's merchant; the same `idempotencyKey` again (1 to 255 printable
    /// ASCII characters) is the same refund.
    public func refund(_ paymentID: PaymentID, _ body: CreateRefund, idempotencyKey: String) async throws(LedgerClientError)
        -> RefundResource
    {
        try await post("/v1/payments/\(paymentID)/refunds", body, idempotencyKey: idempotencyKey)
    }

    public func refunds(of paymentID: PaymentID) async throws(LedgerClientError) -> [RefundResource] {
        try await get("/v1/payments/\(paymentID)/refunds")
    }

    /// The refunds after `cursor` (nil: from the first) of the payments this device is party to; the page's cursor
    /// is where to ask from next.
    public func refunds(after cursor: String?, limit: Int = 100) async throws(LedgerClientError) -> RefundPage {
        try await get("/v1/refunds?limit=\(limit)" + (cursor.map { "&after=\(Self.queryValue($0))" } ?? ""))
    }

    /// The business device's merchant's day in `timeZone` (an IANA name).
    public func dailyReport(date: String, timeZone: String) async throws(LedgerClientError) -> DailyReport {
        try await get("/v1/reports/daily?date=\(Self.queryValue(date))&timeZone=\(Self.queryValue(timeZone))")
    }

    /// A business device's merchant certificate, renewed for its registered keys; the caller checks it
    /// (`MerchantCertificate.verify`) before presenting it.
    public func renewCertificate() async throws(LedgerClientError) -> MerchantCertificate {
        let resource: CertificateResource = try await post("/v1/device/certificate", Empty())
        guard let bytes = Data(base64Encoded: resource.certificate),
            let certificate = try? MerchantCertificate(encoded: [UInt8](bytes))
        else { throw .invalidResponse("the ledger's certificate is not readable") }
        return certificate
    }

    /// Where what this device follows stands (`GET /v1/changes`): answered at once if that no longer matches
    /// `token`, else held until it does or `wait` seconds pass. Tried once, for at most `wait` + 15 s.
    public func changes(after token: String?, wait seconds: Int) async throws(LedgerClientError) -> LedgerChanges {
        try await once(timeoutSeconds: Int64(seconds) + 15)
            .get("/v1/changes?wait=\(seconds)" + (token.map { "&after=\(Self.queryValue($0))" } ?? ""))
    }

    /// The ledger-signed deny list as the ledger answered it; the caller verifies it with its trusted ledger keys
    /// (`DenyList.verify`) before relying on it.
    public func denyList() async throws(LedgerClientError) -> DenyList {
        let resource: DenyListResource = try await get("/v1/deny-list")
        guard let bytes = Data(base64Encoded: resource.denyList), let list = try? DenyList(encoded: [UInt8](bytes)) else {
            throw LedgerClientError.invalidResponse("the deny list is not a DenyList")
        }
        return list
    }

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// A query parameter's value, percent-encoded.
    static func queryValue(_ text: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// The body of a POST that takes no parameters.
struct Empty: Codable, Sendable {}
