import BlepayProtocol

/// A double spend the ledger refused: the voucher's device key signed two acceptances that cannot both be paid (one
/// sequence number twice, or overlapping parts of the limit). Both acceptances are kept as signed, so the proof
/// stands on its own; the device key is blocked from then on.
public struct DoubleSpendResource: Codable, Sendable, Hashable {
    public let id: String
    public let voucherId: String
    /// The device key (hex) that signed both acceptances.
    public let deviceKey: String
    /// `sequence_reused` or `range_overlap`.
    public let kind: PreAuthorization.Settlement
    /// The refused payment: its merchant, id, signed request and acceptance (base64).
    public let merchantId: String
    public let paymentId: String
    public let request: String
    public let acceptance: String
    /// The settled payment it conflicts with, and that payment's acceptance (base64).
    public let settledMerchantId: String
    public let settledPaymentId: String
    public let settledAcceptance: String
    public let detectedAt: UInt64

    public init(id: String, voucherId: String, deviceKey: String, kind: PreAuthorization.Settlement, merchantId: String,
        paymentId: String, request: String, acceptance: String, settledMerchantId: String, settledPaymentId: String,
        settledAcceptance: String, detectedAt: UInt64)
    {
        self.id = id
        self.voucherId = voucherId
        self.deviceKey = deviceKey
        self.kind = kind
        self.merchantId = merchantId
        self.paymentId = paymentId
        self.request = request
        self.acceptance = acceptance
        self.settledMerchantId = settledMerchantId
        self.settledPaymentId = settledPaymentId
        self.settledAcceptance = settledAcceptance
        self.detectedAt = detectedAt
    }
}

public struct DoubleSpendList: Codable, Sendable, Hashable {
    public let doubleSpends: [DoubleSpendResource]

    public init(doubleSpends: [DoubleSpendResource]) { self.doubleSpends = doubleSpends }
}

/// The ledger-signed deny list (`docs/protocol.md` §6.7) as base64, and what it says, readable.
public struct DenyListResource: Codable, Sendable, Hashable {
    public let denyList: String
    public let issuedAt: UInt64
    /// Voucher ids (hex) voided and not yet released.
    public let voidedVouchers: [String]
    /// Device keys (hex) blocked: for a double spend, revoked, or of a blocked merchant's business.
    public let blockedKeys: [String]
    public let keyId: String

    public init(_ list: DenyList, base64: String) {
        denyList = base64
        issuedAt = list.issuedAt.millisecondsSince1970
        voidedVouchers = list.voidedVouchers.map(\.description)
        blockedKeys = list.blockedKeys.map(\.description)
        keyId = list.ledgerKeyID.description
    }
}

/// `GET /v1/changes`: where what a device follows stands at the ledger (the deny list, the refunds of its payments).
/// The token is opaque: a device compares it with the one it last had, and asks again with it to wait for the next.
public struct LedgerChanges: Codable, Sendable, Hashable {
    public let token: String

    public init(token: String) { self.token = token }
}
