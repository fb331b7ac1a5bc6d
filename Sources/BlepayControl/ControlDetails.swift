import BlepayProtocol
import DBusKit

/// What the control API says about a payment or an event besides its kind and id: one typed value, written as the
/// `a{sv}` of `PaymentEvent`, `PaymentStatus` and `ListPayments` and as the `details` of `blepayctl --json`, from
/// the one table of keys below. Amounts are minor units of `currency` (its own: 2 digits for USD, 0 for JPY).
public struct ControlDetails: Sendable, Hashable {
    public var peer: UInt64?
    public var amount: UInt64?
    public var currency: String?
    public var tip: UInt64?
    /// Amount and tip, as accepted.
    public var total: UInt64?
    public var reference: String?
    public var merchantID: String?
    public var merchantName: String?
    /// Milliseconds since 1970.
    public var expiresAt: UInt64?
    /// Who cancelled: `customer` or `business`.
    public var by: String?
    /// A payment error's stable name and number (`docs/errors.md`), and what went wrong, for logs.
    public var code: String?
    public var codeNumber: UInt32?
    public var detail: String?
    public var transactionID: String?
    public var receiptStatus: String?
    /// A voucher's: the instrument it draws on, what was signed against it (minor units, in how many uses), when it
    /// was issued and voided (milliseconds since 1970). Its limit is `amount`.
    public var instrumentID: String?
    public var spent: UInt64?
    public var uses: UInt32?
    public var issuedAt: UInt64?
    public var voidedAt: UInt64?
    /// A payment kept for settlement: the voucher it was paid under, when it was kept and when the ledger decided it
    /// (milliseconds since 1970).
    public var voucherID: String?
    public var queuedAt: UInt64?
    public var endedAt: UInt64?
    /// A refund's id, the payment's refunded total after it (minor units), and why it was made.
    public var refundID: String?
    public var refunded: UInt64?
    public var reason: String?
    /// A receipt as the ledger encoded it, in base64.
    public var receipt: String?
    /// Who paid or was paid: the merchant's name (customer), the payer key's fingerprint (business).
    public var counterpart: String?

    public init() {}

    /// Every key, its D-Bus type, and where it lives: the one place the contract spells them.
    package enum Field: CaseIterable {
        case peer, amount, currency, tip, total, reference, merchantID, merchantName, expiresAt, by, code, codeNumber
        case detail, transactionID, receiptStatus, instrumentID, spent, uses, issuedAt, voidedAt, voucherID, queuedAt
        case endedAt, refundID, refunded, reason, receipt, counterpart

        package var key: String {
            switch self {
            case .peer: "peer"
            case .amount: "amount"
            case .currency: "currency"
            case .tip: "tip"
            case .total: "total"
            case .reference: "reference"
            case .merchantID: "merchant_id"
            case .merchantName: "merchant_name"
            case .expiresAt: "expires_at"
            case .by: "by"
            case .code: "code"
            case .codeNumber: "code_number"
            case .detail: "detail"
            case .transactionID: "transaction_id"
            case .receiptStatus: "receipt_status"
            case .instrumentID: "instrument_id"
            case .spent: "spent"
            case .uses: "uses"
            case .issuedAt: "issued_at"
            case .voidedAt: "voided_at"
            case .voucherID: "voucher_id"
            case .queuedAt: "queued_at"
            case .endedAt: "ended_at"
            case .refundID: "refund_id"
            case .refunded: "refunded"
            case .reason: "reason"
            case .receipt: "receipt"
            case .counterpart: "counterpart"
            }
        }

        package enum Value {
            case number(WritableKeyPath<ControlDetails, UInt64?>)
            case smallNumber(WritableKeyPath<ControlDetails, UInt32?>)
            case text(WritableKeyPath<ControlDetails, String?>)
        }

        package var value: Value {
            switch self {
            case .peer: .number(\.peer)
            case .amount: .number(\.amount)
            case .currency: .text(\.currency)
            case .tip: .number(\.tip)
            case .total: .number(\.total)
            case .reference: .text(\.reference)
            case .merchantID: .text(\.merchantID)
            case .merchantName: .text(\.merchantName)
            case .expiresAt: .number(\.expiresAt)
            case .by: .text(\.by)
            case .code: .text(\.code)
            case .codeNumber: .smallNumber(\.codeNumber)
            case .detail: .text(\.detail)
            case .transactionID: .text(\.transactionID)
            case .receiptStatus: .text(\.receiptStatus)
            case .instrumentID: .text(\.instrumentID)
            case .spent: .number(\.spent)
            case .uses: .smallNumber(\.uses)
            case .issuedAt: .number(\.issuedAt)
            case .voidedAt: .number(\.voidedAt)
            case .voucherID: .text(\.voucherID)
            case .queuedAt: .number(\.queuedAt)
            case .endedAt: .number(\.endedAt)
            case .refundID: .text(\.refundID)
            case .refunded: .number(\.refunded)
            case .reason: .text(\.reason)
            case .receipt: .text(\.receipt)
            case .counterpart: .text(\.counterpart)
            }
        }
    }

    /// The `a{sv}` on the bus.
    public var dbusValue: DBusValue {
        var entries: [String: DBusValue] = [:]
        for field in Field.allCases {
            switch field.value {
            case .number(let path): if let value = self[keyPath: path] { entries[field.key] = .uint64(value) }
            case .smallNumber(let path): if let value = self[keyPath: path] { entries[field.key] = .uint32(value) }
            case .text(let path): if let value = self[keyPath: path] { entries[field.key] = .string(value) }
            }
        }
        return .stringDictionary(entries)
    }

    /// Reads an `a{sv}`; a key of the wrong type is a `dbus.type-mismatch`, unknown keys are ignored (a newer
    /// daemon may add some).
    public init(dbus value: DBusValue) throws(DBusError) {
        let entries = try value.decode([String: DBusValue].self)
        for field in Field.allCases {
            guard let entry = entries[field.key]?.unwrapped else { continue }
            switch field.value {
            case .number(let path): self[keyPath: path] = try entry.decode(UInt64.self)
            case .smallNumber(let path): self[keyPath: path] = try entry.decode(UInt32.self)
            case .text(let path): self[keyPath: path] = try entry.decode(String.self)
            }
        }
    }

    /// An amount of this currency as people read it (`25.50 USD`, `2550 JPY`), if both are known.
    package func money(_ minorUnits: UInt64?) -> Money? {
        guard let minorUnits, let code = currency, let currency = try? Currency(code) else { return nil }
        return try? Money(minorUnits: minorUnits, currency: currency)
    }
}

extension ControlDetails: Codable {
    private struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for field in Field.allCases {
            let key = Key(stringValue: field.key)
            switch field.value {
            case .number(let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            case .smallNumber(let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            case .text(let path): try container.encodeIfPresent(self[keyPath: path], forKey: key)
            }
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        for field in Field.allCases {
            let key = Key(stringValue: field.key)
            switch field.value {
            case .number(let path): self[keyPath: path] = try container.decodeIfPresent(UInt64.self, forKey: key)
            case .smallNumber(let path): self[keyPath: path] = try container.decodeIfPresent(UInt32.self, forKey: key)
            case .text(let path): self[keyPath: path] = try container.decodeIfPresent(String.self, forKey: key)
            }
        }
    }
}
