import BlepayProtocol

/// A payment as the history keeps it: the signed request (amount, currency, reference and merchant are in it), what
/// was accepted, who paid or was paid, where it stands and its receipt (the ledger-signed one once settled).
public struct HistoryPayment: Sendable, Hashable {
    public let request: PaymentRequest
    /// A `PaymentStatus` name, or `settled` and `settlement-refused` for one taken offline.
    public let status: String
    /// Nothing more will happen to it: retention may forget it. Open, accepted and pending-settlement ones are not.
    public let ended: Bool
    /// Amount and tip, once accepted.
    public let totalMinorUnits: UInt64?
    public let tipMinorUnits: UInt64?
    /// The customer's: the merchant's name; the business's: the payer key's fingerprint.
    public let counterpart: String?
    public let receipt: Receipt?
    public let createdAt: Timestamp
    public let updatedAt: Timestamp
    /// What its refunds gave back, in all.
    public let refundedMinorUnits: UInt64
}

/// One event of a payment, as the control API named it: its kind, when it was kept, and its details (JSON).
public struct HistoryEvent: Sendable, Hashable {
    public let kind: String
    public let at: Timestamp
    public let details: String

    public init(kind: String, at: Timestamp, details: String) {
        self.kind = kind
        self.at = at
        self.details = details
    }
}

/// One refund of a payment: how much, the payment's refunded total after it, why, and the receipt that proves it
/// (kept as its bytes).
public struct HistoryRefund: Sendable, Hashable {
    public let refundID: String
    public let merchantID: String
    public let paymentID: PaymentID
    public let amountMinorUnits: UInt64
    public let currency: String
    /// What the payment has had refunded, this refund included.
    public let refundedMinorUnits: UInt64
    public let reason: String
    public let receipt: [UInt8]
    public let at: Timestamp

    public init(
        refundID: String, merchantID: String, paymentID: PaymentID, amountMinorUnits: UInt64, currency: String,
        refundedMinorUnits: UInt64, reason: String, receipt: [UInt8], at: Timestamp
    ) {
        self.refundID = refundID
        self.merchantID = merchantID
        self.paymentID = paymentID
        self.amountMinorUnits = amountMinorUnits
        self.currency = currency
        self.refundedMinorUnits = refundedMinorUnits
        self.reason = reason
        self.receipt = receipt
        self.at = at
    }

    /// The refund a ledger-signed receipt attests.
    public init(_ receipt: RefundReceipt) {
        self.init(
            refundID: receipt.refundID, merchantID: receipt.merchantID, paymentID: receipt.paymentID,
            amountMinorUnits: receipt.amount.minorUnits, currency: receipt.amount.currency.code,
            refundedMinorUnits: receipt.refundedMinorUnits, reason: receipt.reason ?? "", receipt: receipt.encoded,
            at: receipt.issuedAt)
    }
}

/// What one event changes of a payment. Without `request` it only updates a payment already kept (a settlement
/// verdict for a payment the machines no longer hold); nil fields leave what is kept as it is.
public struct HistoryChange: Sendable, Hashable {
    public let paymentID: PaymentID
    public let request: PaymentRequest?
    public let status: String
    public let ended: Bool
    public let totalMinorUnits: UInt64?
    public let tipMinorUnits: UInt64?
    public let counterpart: String?
    public let receipt: Receipt?
    public let event: HistoryEvent

    public init(
        paymentID: PaymentID, request: PaymentRequest?, status: String, ended: Bool, totalMinorUnits: UInt64? = nil,
        tipMinorUnits: UInt64? = nil, counterpart: String? = nil, receipt: Receipt? = nil, event: HistoryEvent
    ) {
        self.paymentID = paymentID
        self.request = request
        self.status = status
        self.ended = ended
        self.totalMinorUnits = totalMinorUnits
        self.tipMinorUnits = tipMinorUnits
        self.counterpart = counterpart
        self.receipt = receipt
        self.event = event
    }
}

/// Which payments a page lists, newest first: created in `since..<until`, of `status`, after `cursor` (the page
/// before's `next`).
public struct HistoryQuery: Sendable, Hashable {
    public static let limits = 1...500

    public var since: Timestamp?
    public var until: Timestamp?
    public var status: String?
    public var limit: Int
    public var cursor: String?

    public init(since: Timestamp? = nil, until: Timestamp? = nil, status: String? = nil, limit: Int = 50, cursor: String? = nil) {
        self.since = since
        self.until = until
        self.status = status
        self.limit = limit
        self.cursor = cursor
    }
}
