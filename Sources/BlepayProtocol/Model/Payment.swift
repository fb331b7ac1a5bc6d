/// A business's request to be paid, offered to every connected customer. Signed by the merchant's signing key
/// (vouched for by the `MerchantCertificate` the business presented in the handshake) so that the acceptance, the
/// ledger and any auditor can check offline who asked for what.
public struct PaymentRequest: Sendable, Hashable {
    public static let referenceLimit = 64
    public static let merchantNameLimit = 64
    /// Longest validity a request may ask for; a payment request is for someone standing at the counter.
    public static let maximumLifetimeMilliseconds: UInt64 = 15 * 60 * 1000

    public let paymentID: PaymentID
    public let amount: Money
    public let reference: String?
    public let merchantID: String
    public let merchantName: String
    public let createdAt: Timestamp
    public let expiresAt: Timestamp
    /// Whether the business can reach the ledger now; if not, an online customer executes the payment itself.
    public let businessOnline: Bool
    /// Ed25519 by the merchant's signing key over the request's signing bytes.
    public let signature: Signature64

    public init(
        paymentID: PaymentID, amount: Money, reference: String?, merchantID: String, merchantName: String,
        createdAt: Timestamp, expiresAt: Timestamp, businessOnline: Bool, signature: Signature64
    ) throws(ProtocolError) {
        guard amount.minorUnits > 0 else { throw ProtocolError(.invalidAmount, "a payment request is for more than 0") }
        guard expiresAt > createdAt, expiresAt.millisecondsSince1970 - createdAt.millisecondsSince1970
            <= Self.maximumLifetimeMilliseconds
        else { throw ProtocolError(.invalidValue, "a request expires after it is created, within 15 minutes") }
        self.paymentID = paymentID
        self.amount = amount
        self.reference = try reference.map { (r) throws(ProtocolError) in
            try Text.validate(r, field: "reference", limit: Self.referenceLimit)
        }
        self.merchantID = try Text.validateIdentifier(merchantID, field: "merchant id")
        self.merchantName = try Text.validateName(merchantName, field: "merchant name", limit: Self.merchantNameLimit)
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.businessOnline = businessOnline
        self.signature = signature
    }
}

/// The customer's acceptance of one exact request, signed by the customer's device key (Ed25519) over its signing
/// bytes, which include the hash of the signed request and the hash of the Noise handshake it was sent in: it cannot
/// be replayed for another payment or in another session, and the business and ledger verify it offline.
public struct PaymentAcceptance: Sendable, Hashable {
    public static let instrumentIDLimit = 64

    public let paymentID: PaymentID
    /// The requested amount, repeated so the signature covers it.
    public let amount: Money
    /// The tip in minor units of the amount's currency.
    public let tipMinorUnits: UInt64
    public let instrumentID: String
    /// True when the instrument is delegated by the customer's own client (not managed by blepay's ledger).
    public let delegatedInstrument: Bool
    public let createdAt: Timestamp
    /// SHA-256 of the request's signed encoding.
    public let requestHash: Hash32
    /// The Noise handshake hash of the session the acceptance was sent in.
    public let sessionHash: Hash32
    /// The customer's device public key (Ed25519), registered with the ledger for the instrument.
    public let customerKey: Key32
    /// For a payment made while both sides are offline.
    public let preAuthorization: PreAuthorizationPresentation?
    public let signature: Signature64

    public init(
        paymentID: PaymentID, amount: Money, tipMinorUnits: UInt64, instrumentID: String, delegatedInstrument: Bool,
        createdAt: Timestamp, requestHash: Hash32, sessionHash: Hash32, customerKey: Key32,
        preAuthorization: PreAuthorizationPresentation?, signature: Signature64
    ) throws(ProtocolError) {
        guard tipMinorUnits <= Money.maximumMinorUnits - amount.minorUnits else {
            throw ProtocolError(.invalidAmount, "amount and tip together exceed \(Money.maximumMinorUnits)")
        }
        self.paymentID = paymentID
        self.amount = amount
        self.tipMinorUnits = tipMinorUnits
        self.instrumentID = try Text.validateIdentifier(instrumentID, field: "instrument id")
        self.delegatedInstrument = delegatedInstrument
        self.createdAt = createdAt
        self.requestHash = requestHash
        self.sessionHash = sessionHash
        self.customerKey = customerKey
        self.preAuthorization = preAuthorization
        self.signature = signature
    }

    /// Amount plus tip: what the customer is charged.
    public var total: Money { try! Money(minorUnits: amount.minorUnits + tipMinorUnits, currency: amount.currency) }
}

/// Either side withdraws from a payment. After a customer's cancel the business offers that payment to this
/// customer no more; after the business's, no customer can pay it.
public struct CancelPayment: Sendable, Hashable {
    public let paymentID: PaymentID
    public let reason: PaymentErrorCode

    public init(paymentID: PaymentID, reason: PaymentErrorCode) {
        self.paymentID = paymentID
        self.reason = reason
    }
}

/// How a payment ended for the customer it was sent to.
public struct PaymentResult: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        /// Executed by the ledger, or queued under a pre-authorization when both sides were offline.
        case finished(Receipt)
        /// Not executed; nothing was charged (`outcomeUnknown` is sent only while a look-up is under way).
        case failed(PaymentErrorCode, detail: String?)
    }

    public static let detailLimit = 128

    public let paymentID: PaymentID
    public let outcome: Outcome

    public init(paymentID: PaymentID, outcome: Outcome) throws(ProtocolError) {
        if case .failed(_, let detail?) = outcome {
            _ = try Text.validate(detail, field: "detail", limit: Self.detailLimit)
        }
        if case .finished(let receipt) = outcome, receipt.paymentID != paymentID {
            throw ProtocolError(.invalidValue, "the receipt is for another payment")
        }
        self.paymentID = paymentID
        self.outcome = outcome
    }
}

/// One customer's acceptance of a payment, named by its hash: the body of two messages. Only the customer and the
/// business hold the acceptance (it travelled encrypted), so its hash identifies the customer to the business and
/// the acceptance to the customer.
public struct AcceptanceReference: Sendable, Hashable {
    public let paymentID: PaymentID
    /// SHA-256 of the acceptance's encoding.
    public let acceptanceHash: Hash32

    public init(paymentID: PaymentID, acceptanceHash: Hash32) {
        self.paymentID = paymentID
        self.acceptanceHash = acceptanceHash
    }
}

/// Business → customer, for an offline request: the business chose this customer's acceptance and asks the
/// customer, who can reach the ledger, to execute it and return the ledger's receipt. A customer never executes an
/// offline request without it, so that only one customer pays.
public typealias GoAhead = AcceptanceReference

/// Customer → business, in a new session: the customer accepted this payment and lost the link before its result.
/// The business answers with the payment's `PaymentResult` once it has one, and with nothing otherwise.
public typealias ResultQuery = AcceptanceReference

/// Sent to every customer but the winner once another customer paid the request.
public struct OtherPaid: Sendable, Hashable {
    public let paymentID: PaymentID

    public init(paymentID: PaymentID) { self.paymentID = paymentID }
}

/// A failure outside any payment's result (protocol errors, version mismatch), or for a payment that has none yet.
public struct ErrorMessage: Sendable, Hashable {
    public let code: PaymentErrorCode
    public let paymentID: PaymentID?
    public let detail: String?

    public init(code: PaymentErrorCode, paymentID: PaymentID?, detail: String?) throws(ProtocolError) {
        self.code = code
        self.paymentID = paymentID
        self.detail = try detail.map { (d) throws(ProtocolError) in
            try Text.validate(d, field: "detail", limit: PaymentResult.detailLimit)
        }
    }
}
