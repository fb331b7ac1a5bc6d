/// The ledger's proof that money of a settled payment went back to the book that paid it: which payment, the
/// merchant who refunded, the payer's device key (as its receipt names it), this refund's amount, and where the
/// payment's refunds stand with it. Signed by the ledger (Ed25519); anyone verifies it with the ledger's public key.
public struct RefundReceipt: Sendable, Hashable {
    /// The longest reason a refund carries.
    public static let reasonLimit = 140

    public let refundID: String
    public let paymentID: PaymentID
    public let merchantID: String
    /// The customer device key that paid the payment.
    public let payerKey: Key32
    /// This refund.
    public let amount: Money
    /// Every refund of the payment so far, this one included.
    public let refundedMinorUnits: UInt64
    /// What the payment moved: its amount and tip.
    public let paidMinorUnits: UInt64
    public let reason: String?
    public let issuedAt: Timestamp
    /// The ledger key that signed it (the first 8 bytes of SHA-256 of its public key).
    public let ledgerKeyID: FixedBytes<Bytes8>
    public let signature: Signature64

    public init(
        refundID: String, paymentID: PaymentID, merchantID: String, payerKey: Key32, amount: Money,
        refundedMinorUnits: UInt64, paidMinorUnits: UInt64, reason: String?, issuedAt: Timestamp,
        ledgerKeyID: FixedBytes<Bytes8>, signature: Signature64
    ) throws(ProtocolError) {
        // A refund moves something, and a payment's refunds never pass what it paid.
        guard amount.minorUnits > 0, amount.minorUnits <= refundedMinorUnits, refundedMinorUnits <= paidMinorUnits else {
            throw ProtocolError(.invalidAmount, "a refund is more than 0 and within the payment's refunds, within what it paid")
        }
        self.refundID = try Text.validateIdentifier(refundID, field: "refund id")
        self.paymentID = paymentID
        self.merchantID = try Text.validateIdentifier(merchantID, field: "merchant id")
        self.payerKey = payerKey
        self.amount = amount
        self.refundedMinorUnits = refundedMinorUnits
        self.paidMinorUnits = paidMinorUnits
        self.reason = try reason.map { (r) throws(ProtocolError) in
            try Text.validateName(r, field: "reason", limit: Self.reasonLimit)
        }
        self.issuedAt = issuedAt
        self.ledgerKeyID = ledgerKeyID
        self.signature = signature
    }
}
