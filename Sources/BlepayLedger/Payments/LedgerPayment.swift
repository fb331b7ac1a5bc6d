import BlepayProtocol
import Crypto

/// A payment as the ledger keeps it, through TrueLayer's statuses: created by the business (`authorizationRequired`),
/// accepted with the customer's signed acceptance (`authorizing`), funds held (`authorized`), the hold posted to the
/// merchant (`executed`), and final (`settled`); or `failed` with a reason, or `cancelled` before acceptance.
/// A value type over the journal: each step either completes or changes nothing. An acceptance the ledger refuses
/// leaves the payment open: a request may go to several customers, and the first valid acceptance pays.
public struct LedgerPayment: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        case authorizationRequired = "authorization_required"
        case authorizing, authorized, executed, settled, failed, cancelled
    }

    public struct Change: Sendable, Hashable {
        public let status: Status
        public let at: Timestamp

        public init(status: Status, at: Timestamp) {
            self.status = status
            self.at = at
        }
    }

    public let request: PaymentRequest
    public private(set) var acceptance: PaymentAcceptance?
    public private(set) var failure: PaymentErrorCode?
    public private(set) var history: [Change]
    public var status: Status { history.last!.status }
    /// The hold and the transfer that pay it, named by merchant and payment id (see `name(_:of:)`): a payment id is
    /// its merchant's, so another merchant's payment of the same id has books of its own. A payment created before ids
    /// were scoped by merchant keeps the names it had, by payment id alone.
    public let holdID: String
    public let transferID: String

    /// How long past the request's expiry a hold is kept if execution stalls, before it is released.
    public static let holdMarginMilliseconds: UInt64 = 15 * 60 * 1000

    public init(request: PaymentRequest, at now: Timestamp) {
        self.init(request: request, acceptance: nil, failure: nil, history: [Change(status: .authorizationRequired, at: now)])
    }

    /// A payment as storage kept it, with the names its hold and transfer were given when it was created (by
    /// default, the ones a payment created now gets).
    public init(request: PaymentRequest, acceptance: PaymentAcceptance?, failure: PaymentErrorCode?, history: [Change],
        holdID: String? = nil, transferID: String? = nil)
    {
        precondition(!history.isEmpty, "a payment has a history from its creation")
        self.request = request
        self.acceptance = acceptance
        self.failure = failure
        self.history = history
        self.holdID = holdID ?? Self.name("hold", of: request)
        self.transferID = transferID ?? Self.name("pay", of: request)
    }

    /// The name a new payment's hold or transfer gets, which fits its receipt's transaction id (a protocol identifier:
    /// at most 64 characters) for any merchant id: `{kind}:{merchant id}:{payment id}` while that fits, as it does
    /// for the ledger's own account ids (24 characters). A longer merchant id, which would otherwise fail the receipt
    /// of a payment whose money moved, is named by the first 13 bytes of its SHA-256 after the payment id instead:
    /// ending in that digest rather than in a payment id, such a name is never one of the first form.
    static func name(_ kind: String, of request: PaymentRequest) -> String {
        let name = "\(kind):\(request.merchantID):\(request.paymentID)"
        guard name.utf8.count > 64 else { return name }
        return "\(kind):\(request.paymentID):\(SHA256.hash(data: Array(request.merchantID.utf8)).prefix(13).hex)"
    }

    /// Takes the customer's acceptance and holds its total (amount and tip) on the instrument's book for the
    /// merchant: `authorizing`, then `authorized`. The acceptance is signed by `deviceKey` (the key registered for
    /// the instrument), bound to this exact request, for its amount and currency, before expiry; the instrument is
    /// not blocked and has the funds. A refusal changes neither the payment nor the journal, so that one customer's
    /// empty or blocked card does not end the sale for the others. The same acceptance again is a no-op.
    /// `signatures` may hold the acceptance's signature checked already.
    public mutating func accept(_ acceptance: PaymentAcceptance, deviceKey: Key32, from instrument: AccountID,
        blocked: Bool, to merchant: AccountID, in journal: inout Journal, at now: Timestamp,
        signatures: CheckedSignatures = CheckedSignatures()) throws(LedgerError)
    {
        if acceptance == self.acceptance { return }
        guard status == .authorizationRequired else { throw LedgerError(.invalidStatus, "the payment is \(status.rawValue)") }
        guard now < request.expiresAt else { throw LedgerError(.expired, "the request expired at \(request.expiresAt)") }
        guard acceptance.paymentID == request.paymentID, acceptance.amount == request.amount else {
            throw LedgerError(.amountMismatch, "accepted \(acceptance.amount), requested \(request.amount)")
        }
        guard acceptance.customerKey == deviceKey, acceptance.requestHash == request.hash,
            signatures.isValid(acceptance.signature, of: acceptance.signingBytes, by: deviceKey)
        else { throw LedgerError(.invalidSignature, "the acceptance is not the device's, or not for this request") }
        guard !blocked else { throw LedgerError(.blocked, "the instrument is blocked") }
        // The journal checks before it changes anything: a refused hold leaves the books as they were.
        try journal.hold(id: holdID, from: instrument, to: merchant, amount: acceptance.total,
            expiresAt: request.expiresAt.adding(milliseconds: Self.holdMarginMilliseconds))
        self.acceptance = acceptance
        history.append(Change(status: .authorizing, at: now))
        history.append(Change(status: .authorized, at: now))
    }

    /// Posts the hold to the merchant: executed, and (money between the ledger's own accounts being final at once)
    /// settled.
    public mutating func execute(in journal: inout Journal, at now: Timestamp) throws(LedgerError) {
        guard status == .authorized, let acceptance else { throw LedgerError(.invalidStatus, "the payment is \(status.rawValue)") }
        do {
            try journal.post(hold: holdID, amount: acceptance.total.minorUnits, transferID: transferID, at: now)
        } catch {
            fail(error.paymentErrorCode, at: now)
            throw error
        }
        history.append(Change(status: .executed, at: now))
        history.append(Change(status: .settled, at: now))
    }

    /// The ledger-signed receipt of a settled payment, which customer and business keep and anyone can verify
    /// offline with the ledger's public key.
    public func receipt(signedBy ledgerKey: SigningKey) throws(LedgerError) -> Receipt {
        guard status == .settled, let acceptance, let settledAt = history.last?.at else {
            throw LedgerError(.invalidStatus, "the payment is \(status.rawValue)")
        }
        return try Receipt.signed(request, acceptance, transactionID: transferID, at: settledAt, by: ledgerKey)
    }

    /// The business withdraws the request; only before it is accepted.
    public mutating func cancel(at now: Timestamp) throws(LedgerError) {
        guard status == .authorizationRequired else { throw LedgerError(.invalidStatus, "the payment is \(status.rawValue)") }
        history.append(Change(status: .cancelled, at: now))
    }

    /// Fails a request nobody accepted in time. Returns whether it did.
    public mutating func expire(at now: Timestamp) -> Bool {
        guard status == .authorizationRequired, now >= request.expiresAt else { return false }
        fail(.expired, at: now)
        return true
    }

    private mutating func fail(_ code: PaymentErrorCode, at now: Timestamp) {
        failure = code
        history.append(Change(status: .failed, at: now))
    }
}
