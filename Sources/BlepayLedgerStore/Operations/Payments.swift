import BlepayLedger
import BlepayProtocol
import Foundation

/// Payments: created by the business with its signed request, accepted with the customer's signed acceptance
/// (authorized and executed at once: money between the ledger's own books is final), cancelled, expired. A payment
/// id is its merchant's (the business picks it): a payment is found by merchant and id, so that another merchant who
/// learns an id cannot take it first.
extension LedgerOperations {
    struct StoredPayment {
        var payment: LedgerPayment
        let merchant: String
        var customer: String?
        /// The sum of its refunds.
        var refunded: Int64 = 0
    }

    /// The signatures a create or accept body carries, checked before its transaction (see `CheckedSignatures`):
    /// a request by the creating device's key, if known, and an acceptance by the customer key it names.
    public static func checkSignatures(of body: CreatePayment, deviceKey: Key32?) -> CheckedSignatures {
        var signatures = CheckedSignatures()
        if let deviceKey, let request = try? message("request", base64: body.request, PaymentRequest.init(encoded:)) {
            signatures.check(request.signature, of: request.signingBytes, by: deviceKey)
        }
        return signatures
    }

    public static func checkSignatures(of body: AcceptPayment) -> CheckedSignatures {
        var signatures = CheckedSignatures()
        if let acceptance = try? message("acceptance", base64: body.acceptance, PaymentAcceptance.init(encoded:)) {
            signatures.check(acceptance.signature, of: acceptance.signingBytes, by: acceptance.customerKey)
        }
        return signatures
    }

    public func createPayment(_ tx: any SQLTransaction, _ body: CreatePayment, device: Device, at now: Timestamp,
        signatures: CheckedSignatures = CheckedSignatures()) throws -> PaymentResource
    {
        guard device.accountKind == .merchant else { throw APIError.forbidden("only business devices create payments") }
        let request = try Self.message("request", base64: body.request) { bytes throws(ProtocolError) in try PaymentRequest(encoded: bytes) }
        try Self.checkCreated(request, at: now)
        guard request.merchantID == device.account,
            signatures.isValid(request.signature, of: request.signingBytes, by: device.signingKey)
        else { throw APIError(LedgerError(.invalidSignature, "the request is not signed by this device for its merchant")) }
        if let stored = try load(tx, merchant: device.account, request.paymentID) {
            guard stored.payment.request == request else { throw APIError(LedgerError(.idConflict, "payment \(request.paymentID) exists")) }
            return try resource(stored)
        }
        guard now < request.expiresAt else { throw APIError(LedgerError(.expired, "the request expired")) }
        let stored = StoredPayment(payment: newPayment(request, at: now), merchant: device.account, customer: nil)
        try insert(tx, stored, at: now)
        return try resource(stored)
    }

    /// A request is not made later than the ledger's clock allows (by the request signature's window): devices'
    /// clocks drift a little, and a far-future request would otherwise never expire.
    static func checkCreated(_ request: PaymentRequest, at now: Timestamp) throws(APIError) {
        guard request.createdAt <= now.adding(milliseconds: UInt64(RequestAuthentication.window) * 1000) else {
            throw APIError.invalid("request", "created-in-future", "the request is dated later than the ledger's clock")
        }
    }

    /// Takes the customer's acceptance and executes the payment. The business forwards it, or the customer's
    /// device sends it itself (with the request, if the business never reached the ledger). An acceptance refused
    /// for a reason of its payer (signature, amount, an unknown or blocked instrument, funds, a limit) throws and
    /// leaves the payment open with nothing held, so that another customer's valid acceptance can still pay; only
    /// the request's own end (expired, cancelled, accepted by someone else) refuses every acceptance.
    public func acceptPayment(_ tx: any SQLTransaction, id: String, _ body: AcceptPayment, device: Device, at now: Timestamp,
        signatures: CheckedSignatures = CheckedSignatures()) throws -> PaymentResource
    {
        let acceptance = try Self.message("acceptance", base64: body.acceptance) { bytes throws(ProtocolError) in
            try PaymentAcceptance(encoded: bytes)
        }
        guard acceptance.paymentID.description == id else {
            throw APIError.invalid("acceptance", "payment-mismatch", "the acceptance is for another payment")
        }
        guard acceptance.preAuthorization == nil else {
            throw APIError.invalid("acceptance", "offline-acceptance", "offline acceptances are settled with POST /v1/settlements")
        }
        let request = try body.request.map { text throws(APIError) in
            try Self.message("request", base64: text) { bytes throws(ProtocolError) in try PaymentRequest(encoded: bytes) }
        }
        // Whose payment: the merchant of the request sent along, the business device's own, or else the one whose
        // request the customer signed. A merchant known beforehand has the payment and everything the acceptance is
        // checked against sent together and waited for once.
        let existing: StoredPayment?
        var reads: AcceptanceReads?
        if let merchant = request?.merchantID ?? (device.accountKind == .merchant ? device.account : nil) {
            let payment = try sendPayments(tx, acceptance.paymentID, merchant: merchant)
            reads = try sendAcceptanceReads(tx, acceptance, merchant: merchant)
            existing = try payment.get().first
        } else {
            existing = try payments(tx, acceptance.paymentID).first { $0.payment.request.hash == acceptance.requestHash }
        }
        var stored: StoredPayment
        if let existing {
            stored = existing
        } else {
            guard let request else { throw APIError.notFound("payment") }
            try Self.checkCreated(request, at: now)
            guard request.paymentID == acceptance.paymentID,
                try merchantKeys(tx, merchant: request.merchantID).contains(where: { key in
                    isValidSignature(request.signature, of: request.signingBytes, by: key)
                })
            else { throw APIError(LedgerError(.invalidSignature, "the request is not signed by a device of its merchant")) }
            stored = StoredPayment(payment: newPayment(request, at: now), merchant: request.merchantID, customer: nil)
            try insert(tx, stored, at: now)
        }
        let isCustomer = device.accountKind == .customer && device.signingKey == acceptance.customerKey
        guard device.account == stored.merchant || isCustomer else { throw APIError.notFound("payment") }
        if stored.payment.acceptance == acceptance { return try resource(stored) }
        let checks = try reads.flatMap { $0.merchant == stored.merchant ? $0 : nil }
            ?? sendAcceptanceReads(tx, acceptance, merchant: stored.merchant)
        try checks.unblocked.get()
        // Paid by another payer already: offline from a voucher (an online payer is the payment's own status).
        guard try checks.payer.get() == nil else {
            throw APIError(LedgerError(.invalidStatus, "payment \(acceptance.paymentID) was paid by another payer"))
        }
        // A device caught double spending pays no more: a payer's refusal, so another customer can still pay.
        try checks.notDoubleSpender.get()
        guard let instrument = try checks.instrument.get(),
            (try instrument.text(0) == CreateInstrument.Kind.delegated.rawValue) == acceptance.delegatedInstrument
        else { throw APIError(LedgerError(.unknownAccount, "no such instrument of the accepting customer")) }

        let book = Self.instrumentBook(acceptance.instrumentID)
        let blocked = try instrument.integer(1) != 0
        var journal = try checks.journal.get()
        do {
            try stored.payment.accept(acceptance, deviceKey: acceptance.customerKey, from: book, blocked: blocked,
                to: Self.merchantBook(stored.merchant), in: &journal, at: now, signatures: signatures)
            try stored.payment.execute(in: &journal, at: now)
        } catch { throw APIError(error) }
        stored.customer = try instrument.text(2)
        try recordPayer(tx, Self.payer(instrument: acceptance.instrumentID), merchant: stored.merchant, payment: acceptance.paymentID)
        try Books.save(tx, journal, at: now, last: [Self.merchantBook(stored.merchant)])
        try update(tx, stored, at: now)
        return try resource(stored)
    }

    /// The business withdraws its request before anyone accepted it; cancelling twice is a no-op. A request the
    /// ledger never saw (the business was offline, or left it to the customer to bring) is recorded when its
    /// merchant-signed request comes with the cancel, so that neither path can pay it later.
    public func cancelPayment(_ tx: any SQLTransaction, id: String, _ body: PaymentCancellation, device: Device, at now: Timestamp)
        throws -> PaymentResource
    {
        let paymentID = try Self.paymentID(id)
        var stored: StoredPayment
        if let existing = try load(tx, merchant: device.account, paymentID) {
            stored = existing
        } else {
            guard let requestText = body.request else { throw APIError.notFound("payment") }
            let request = try Self.message("request", base64: requestText) { bytes throws(ProtocolError) in try PaymentRequest(encoded: bytes) }
            try Self.checkCreated(request, at: now)
            guard request.paymentID == paymentID, request.merchantID == device.account,
                try merchantKeys(tx, merchant: request.merchantID).contains(where: { key in
                    isValidSignature(request.signature, of: request.signingBytes, by: key)
                })
            else { throw APIError(LedgerError(.invalidSignature, "the request is not signed by a device of this merchant")) }
            stored = StoredPayment(payment: newPayment(request, at: now), merchant: request.merchantID, customer: nil)
            try insert(tx, stored, at: now)
        }
        guard try payer(tx, merchant: stored.merchant, payment: paymentID).get() == nil || stored.payment.status == .cancelled else {
            throw APIError(LedgerError(.invalidStatus, "payment \(paymentID) was paid"))
        }
        if stored.payment.status != .cancelled {
            do { try stored.payment.cancel(at: now) } catch { throw APIError(error) }
            try update(tx, stored, at: now)
        }
        return try resource(stored)
    }

    /// A payment as its merchant, its paying customer, or the operator may see it, whichever path paid it. A
    /// merchant's device sees its own merchant's payment of the id; a customer who paid that id at several merchants
    /// (or the operator) names the one it means with `merchant`, and is refused without it.
    public func payment(_ tx: any SQLTransaction, id: String, merchant: String? = nil, for principal: Principal) throws
        -> PaymentResource
    {
        let paymentID = try Self.paymentID(id)
        // Settled offline first: a request the business also created online keeps an open row that the voucher paid.
        let offline = try settledOffline(tx, paymentID, merchant: merchant).filter { Self.may(principal, see: $0.stored) }
        let online = try payments(tx, paymentID, merchant: merchant, lock: false).filter { stored in
            Self.may(principal, see: stored) && !offline.contains { $0.stored.merchant == stored.merchant }
        }
        guard offline.count + online.count <= 1 else { throw APIError.merchantRequired(of: id) }
        if let offline = offline.first { return resource(offline.stored, receipt: offline.receipt) }
        guard let stored = online.first else { throw APIError.notFound("payment") }
        return try resource(stored)
    }

    static func may(_ principal: Principal, see stored: StoredPayment) -> Bool {
        guard case .device(let device) = principal else { return true }
        return device.account == stored.merchant || device.account == stored.customer
    }

    static func paymentID(_ text: String) throws(APIError) -> PaymentID {
        guard let bytes = Hex.decode(text, limit: 16), let id = try? PaymentID(bytes: bytes), id.description == text.lowercased()
        else { throw APIError.notFound("payment") }
        return id
    }

    /// A payment created now. Its hold and transfer are named by time (`pay:{UUIDv7}`), so that their rows and
    /// indexes grow at the end rather than at a random page each; the receipt names the transfer.
    func newPayment(_ request: PaymentRequest, at now: Timestamp) -> LedgerPayment {
        let id = ids.next(at: now)
        return LedgerPayment(request: request, acceptance: nil, failure: nil,
            history: [LedgerPayment.Change(status: .authorizationRequired, at: now)], holdID: "hold:\(id)", transferID: "pay:\(id)")
    }

    func load(_ tx: any SQLTransaction, merchant: String, _ id: PaymentID, lock: Bool = true) throws -> StoredPayment? {
        try payments(tx, id, merchant: merchant, lock: lock).first
    }

    /// The online payments of `id`, of `merchant` or of every merchant.
    func payments(_ tx: any SQLTransaction, _ id: PaymentID, merchant: String? = nil, lock: Bool = true) throws -> [StoredPayment] {
        try sendPayments(tx, id, merchant: merchant, lock: lock).get()
    }

    /// `payments`, sent and read when asked for.
    func sendPayments(_ tx: any SQLTransaction, _ id: PaymentID, merchant: String? = nil, lock: Bool = true) throws
        -> Pending<[StoredPayment]>
    {
        try tx.send(
            "SELECT merchant, request, acceptance, customer, failure, history, hold, transfer, "
                + Self.refundedSum(merchant: "payments.merchant", payment: "payments.id") + " FROM payments WHERE id = ?"
                + (merchant == nil ? " ORDER BY merchant" : " AND merchant = ?") + (lock ? tx.dialect.forUpdate : ""),
            [.text(id.description)] + (merchant.map { [.text($0)] } ?? [])
        ).map { result in
            try result.rows.map { row in
                do {
                    let request = try PaymentRequest(encoded: try row.blob(1))
                    let acceptance = try row.optionalBlob(2).map { bytes throws(ProtocolError) in try PaymentAcceptance(encoded: bytes) }
                    let failure = row.values[4] == .null ? nil : PaymentErrorCode(rawValue: UInt16(try row.integer(4)))
                    let history = try JSONDecoder().decode([PaymentResource.Change].self, from: Data(try row.blob(5)))
                    return StoredPayment(
                        payment: LedgerPayment(request: request, acceptance: acceptance, failure: failure,
                            history: history.map { LedgerPayment.Change(status: $0.status, at: Timestamp(millisecondsSince1970: $0.at)) },
                            holdID: try row.text(6), transferID: try row.text(7)),
                        merchant: try row.text(0), customer: try row.optionalText(3), refunded: try row.integer(8))
                } catch let error as ProtocolError {
                    throw StorageError(.corrupt, "payment \(id): \(error)")
                }
            }
        }
    }

    func insert(_ tx: any SQLTransaction, _ stored: StoredPayment, at now: Timestamp) throws {
        try tx.send(
            """
            INSERT INTO payments (id, merchant, request, status, acceptance, customer, instrument, failure, history, expires_at,
                updated_at, created_at, hold, transfer)
            VALUES (?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?)
            """,
            [.text(stored.payment.request.paymentID.description), .text(stored.merchant), .blob(stored.payment.request.encoded),
             .text(stored.payment.status.rawValue), .blob(try Self.history(stored.payment)),
             stored.payment.request.expiresAt.sqlValue, now.sqlValue, now.sqlValue, .text(stored.payment.holdID),
             .text(stored.payment.transferID)])
    }

    func update(_ tx: any SQLTransaction, _ stored: StoredPayment, at now: Timestamp) throws {
        let payment = stored.payment
        try tx.send(
            """
            UPDATE payments SET status = ?, acceptance = ?, customer = ?, instrument = ?, failure = ?, history = ?, updated_at = ?
            WHERE merchant = ? AND id = ?
            """,
            [.text(payment.status.rawValue), payment.acceptance.map { .blob($0.encoded) } ?? .null,
             stored.customer.map { .text($0) } ?? .null, payment.acceptance.map { .text($0.instrumentID) } ?? .null,
             payment.failure.map { .integer(Int64($0.rawValue)) } ?? .null, .blob(try Self.history(payment)), now.sqlValue,
             .text(stored.merchant), .text(payment.request.paymentID.description)])
    }

    static func history(_ payment: LedgerPayment) throws -> [UInt8] {
        Array(try JSONEncoder().encode(payment.history.map { PaymentResource.Change(status: $0.status, at: $0.at.millisecondsSince1970) }))
    }

    func resource(_ stored: StoredPayment) throws -> PaymentResource {
        resource(stored, receipt: stored.payment.status == .settled ? try stored.payment.receipt(signedBy: ledgerKey) : nil)
    }

    /// `receipt` is the settled payment's, online or offline.
    func resource(_ stored: StoredPayment, receipt: Receipt?) -> PaymentResource {
        let payment = stored.payment
        return PaymentResource(
            id: payment.request.paymentID.description, status: payment.status,
            amount: Int64(payment.request.amount.minorUnits), tip: Int64(payment.acceptance?.tipMinorUnits ?? 0),
            currency: payment.request.amount.currency.code, reference: payment.request.reference, merchantId: stored.merchant,
            instrumentId: payment.acceptance?.instrumentID, failureReason: payment.failure?.name,
            expiresAt: payment.request.expiresAt.millisecondsSince1970,
            history: payment.history.map { PaymentResource.Change(status: $0.status, at: $0.at.millisecondsSince1970) },
            receipt: receipt.map { Data($0.encoded).base64EncodedString() }, refunded: stored.refunded)
    }
}
