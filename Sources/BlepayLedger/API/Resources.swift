/// The JSON bodies of the ledger's HTTP API (`docs/ledger-openapi.yaml`), shared by the server and the client.
/// Amounts are integer minor units with an ISO 4217 code; times are milliseconds since 1970; keys are lowercase
/// hex; signed protocol messages (requests, acceptances, receipts, certificates, vouchers) travel as base64 of
/// their exact encoding, so their signatures survive the trip.

public struct LedgerKeyResource: Codable, Sendable, Hashable {
    public let keyId: String
    public let publicKey: String
    /// In `GET /v1/ledger-keys`: "active" (signs now), "next" (published ahead of its activation) or "retired"
    /// (signs nothing more; what it signed still verifies). Absent from `GET /v1/ledger-key`.
    public let status: String?

    public init(keyId: String, publicKey: String, status: String? = nil) {
        self.keyId = keyId
        self.publicKey = publicKey
        self.status = status
    }
}

/// `GET /v1/ledger-keys`: every published ledger key, oldest first.
public struct LedgerKeyList: Codable, Sendable, Hashable {
    public let keys: [LedgerKeyResource]

    public init(keys: [LedgerKeyResource]) { self.keys = keys }
}

/// `POST /v1/device/certificate`: a business device's renewed merchant certificate, base64.
public struct CertificateResource: Codable, Sendable, Hashable {
    public let certificate: String

    public init(certificate: String) { self.certificate = certificate }
}

public struct BalanceResource: Codable, Sendable, Hashable {
    public let currency: String
    public let posted: Int64
    public let held: Int64
    public let available: Int64

    public init(currency: String, posted: Int64, held: Int64) {
        self.currency = currency
        self.posted = posted
        self.held = held
        available = posted - held
    }
}

public struct CreateAccount: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable { case customer, merchant }
    public let kind: Kind
    public let name: String

    public init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }
}

public struct AccountResource: Codable, Sendable, Hashable {
    public let id: String
    public let kind: CreateAccount.Kind
    public let name: String
    /// Merchant accounts: what payments brought in.
    public let balances: [BalanceResource]
    /// Only in the answer that created the account: the bearer token one device enrolls with, once.
    public let enrollmentToken: String?
    /// With the token: when it stops enrolling (milliseconds since 1970).
    public let enrollmentTokenExpiresAt: UInt64?
    /// True in a replayed answer to the request that created the account: the token is shown once and its
    /// idempotency record does not keep it. The operator issues a fresh one (`POST /v1/accounts/{id}/enrollment-tokens`).
    public let enrollmentTokenWithheld: Bool?
    /// Blocked by the operator: its devices are refused and, for a merchant, its payments.
    public let blocked: Bool

    public init(id: String, kind: CreateAccount.Kind, name: String, balances: [BalanceResource], blocked: Bool = false,
        enrollmentToken: EnrollmentTokenResource? = nil)
    {
        self.id = id
        self.kind = kind
        self.name = name
        self.balances = balances
        self.blocked = blocked
        self.enrollmentToken = enrollmentToken?.token
        enrollmentTokenExpiresAt = enrollmentToken?.expiresAt
        enrollmentTokenWithheld = enrollmentToken?.withheld
    }
}

extension AccountResource: CarriesCredential {
    public var replayed: AccountResource? {
        AccountResource(id: id, kind: kind, name: name, balances: balances, blocked: blocked,
            enrollmentToken: enrollmentTokenExpiresAt.map { EnrollmentTokenResource(accountId: id, token: nil, expiresAt: $0) })
    }
}

public struct RegisterDevice: Codable, Sendable, Hashable {
    public let name: String
    /// Ed25519 public key (hex): signs acceptances (customers) or requests (businesses).
    public let signingKey: String
    /// Businesses: the X25519 static key (hex) of their Noise sessions, which the certificate binds.
    public let noiseKey: String?

    public init(name: String, signingKey: String, noiseKey: String?) {
        self.name = name
        self.signingKey = signingKey
        self.noiseKey = noiseKey
    }
}

public struct DeviceResource: Codable, Sendable, Hashable {
    public let id: String
    public let accountId: String
    public let name: String
    /// The HMAC-SHA256 secret (base64) the device signs its requests with. Shown once.
    public let secret: String?
    /// Businesses: the ledger-signed merchant certificate (base64).
    public let certificate: String?

    public init(id: String, accountId: String, name: String, secret: String?, certificate: String?) {
        self.id = id
        self.accountId = accountId
        self.name = name
        self.secret = secret
        self.certificate = certificate
    }
}

extension DeviceResource: CarriesCredential {
    /// An enrollment retried after the device lost the answer must get its secret again: its record keeps it sealed.
    public var replayed: DeviceResource? { nil }
}

public struct CreateInstrument: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable { case card, bankAccount = "bank_account", delegated }

    public struct Card: Codable, Sendable, Hashable {
        public let number: String
        public let expiryMonth: Int
        public let expiryYear: Int
        public let cvc: String

        public init(number: String, expiryMonth: Int, expiryYear: Int, cvc: String) {
            self.number = number
            self.expiryMonth = expiryMonth
            self.expiryYear = expiryYear
            self.cvc = cvc
        }
    }

    public struct BankAccount: Codable, Sendable, Hashable {
        public let firstName: String
        public let lastName: String
        public let routingNumber: String
        public let accountNumber: String
        public let accountType: BankAccountDetails.Kind

        public init(firstName: String, lastName: String, routingNumber: String, accountNumber: String,
            accountType: BankAccountDetails.Kind)
        {
            self.firstName = firstName
            self.lastName = lastName
            self.routingNumber = routingNumber
            self.accountNumber = accountNumber
            self.accountType = accountType
        }
    }

    public struct Delegated: Codable, Sendable, Hashable {
        public let provider: String
        public let reference: String

        public init(provider: String, reference: String) {
            self.provider = provider
            self.reference = reference
        }
    }

    public let type: Kind
    public let card: Card?
    public let bankAccount: BankAccount?
    public let delegated: Delegated?

    public init(card: Card) { (type, self.card, bankAccount, delegated) = (.card, card, nil, nil) }
    public init(bankAccount: BankAccount) { (type, card, self.bankAccount, delegated) = (.bankAccount, nil, bankAccount, nil) }
    public init(delegated: Delegated) { (type, card, bankAccount, self.delegated) = (.delegated, nil, nil, delegated) }
}

/// An instrument as stored: never a card number, CVC or full account number.
public struct InstrumentResource: Codable, Sendable, Hashable {
    public let id: String
    public let type: CreateInstrument.Kind
    public let description: String
    public let card: CardSummary?
    public let bankAccount: BankAccountSummary?
    public let delegated: CreateInstrument.Delegated?
    public let blocked: Bool
    public let balances: [BalanceResource]

    public init(id: String, type: CreateInstrument.Kind, description: String, card: CardSummary?,
        bankAccount: BankAccountSummary?, delegated: CreateInstrument.Delegated?, blocked: Bool, balances: [BalanceResource])
    {
        self.id = id
        self.type = type
        self.description = description
        self.card = card
        self.bankAccount = bankAccount
        self.delegated = delegated
        self.blocked = blocked
        self.balances = balances
    }
}

/// Money into an instrument from outside (the card's credit line, the bank account's balance): the operator's
/// stand-in for a real payment network.
public struct Deposit: Codable, Sendable, Hashable {
    public let amount: Int64
    public let currency: String

    public init(amount: Int64, currency: String) {
        self.amount = amount
        self.currency = currency
    }
}

public struct CreatePayment: Codable, Sendable, Hashable {
    /// The merchant-signed payment request (base64).
    public let request: String

    public init(request: String) { self.request = request }
}

public struct PaymentCancellation: Codable, Sendable, Hashable {
    /// The merchant-signed request (base64), when the ledger may not know the payment: cancelling records it, so
    /// that it can be paid neither online nor offline.
    public let request: String?

    public init(request: String?) { self.request = request }
}

public struct AcceptPayment: Codable, Sendable, Hashable {
    /// The customer-signed acceptance (base64).
    public let acceptance: String
    /// The request (base64), when the payment may not exist at the ledger yet: a customer executing for a business
    /// that is offline.
    public let request: String?

    public init(acceptance: String, request: String?) {
        self.acceptance = acceptance
        self.request = request
    }
}

public struct PaymentResource: Codable, Sendable, Hashable {
    public struct Change: Codable, Sendable, Hashable {
        public let status: LedgerPayment.Status
        public let at: UInt64

        public init(status: LedgerPayment.Status, at: UInt64) {
            self.status = status
            self.at = at
        }
    }

    public let id: String
    public let status: LedgerPayment.Status
    public let amount: Int64
    public let tip: Int64
    public let currency: String
    public let reference: String?
    public let merchantId: String
    public let instrumentId: String?
    /// Why a failed payment failed: a name from the payment error taxonomy (`docs/errors.md`).
    public let failureReason: String?
    public let expiresAt: UInt64
    public let history: [Change]
    /// The ledger-signed receipt (base64) once settled.
    public let receipt: String?
    /// The sum of its refunds (0 when none).
    public let refunded: Int64

    public init(id: String, status: LedgerPayment.Status, amount: Int64, tip: Int64, currency: String, reference: String?,
        merchantId: String, instrumentId: String?, failureReason: String?, expiresAt: UInt64, history: [Change],
        receipt: String?, refunded: Int64 = 0)
    {
        self.id = id
        self.status = status
        self.amount = amount
        self.tip = tip
        self.currency = currency
        self.reference = reference
        self.merchantId = merchantId
        self.instrumentId = instrumentId
        self.failureReason = failureReason
        self.expiresAt = expiresAt
        self.history = history
        self.receipt = receipt
        self.refunded = refunded
    }

    private enum CodingKeys: String, CodingKey {
        case id, status, amount, tip, currency, reference, merchantId, instrumentId, failureReason, expiresAt, history
        case receipt, refunded
    }

    /// `refunded` is absent from the answers of ledgers from before refunds: none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            id: c.decode(String.self, forKey: .id), status: c.decode(LedgerPayment.Status.self, forKey: .status),
            amount: c.decode(Int64.self, forKey: .amount), tip: c.decode(Int64.self, forKey: .tip),
            currency: c.decode(String.self, forKey: .currency), reference: c.decodeIfPresent(String.self, forKey: .reference),
            merchantId: c.decode(String.self, forKey: .merchantId),
            instrumentId: c.decodeIfPresent(String.self, forKey: .instrumentId),
            failureReason: c.decodeIfPresent(String.self, forKey: .failureReason),
            expiresAt: c.decode(UInt64.self, forKey: .expiresAt), history: c.decode([Change].self, forKey: .history),
            receipt: c.decodeIfPresent(String.self, forKey: .receipt),
            refunded: c.decodeIfPresent(Int64.self, forKey: .refunded) ?? 0)
    }
}

public struct CreatePreAuthorization: Codable, Sendable, Hashable {
    public let instrumentId: String
    public let amount: Int64
    public let currency: String
    public let lifetimeSeconds: Int64

    public init(instrumentId: String, amount: Int64, currency: String, lifetimeSeconds: Int64) {
        self.instrumentId = instrumentId
        self.amount = amount
        self.currency = currency
        self.lifetimeSeconds = lifetimeSeconds
    }
}

public struct PreAuthorizationResource: Codable, Sendable, Hashable {
    public let id: String
    public let instrumentId: String
    public let state: PreAuthorization.State
    public let limit: Int64
    public let spent: Int64
    public let currency: String
    public let expiresAt: UInt64
    /// The ledger-signed voucher (base64) the customer presents offline.
    public let voucher: String

    public init(id: String, instrumentId: String, state: PreAuthorization.State, limit: Int64, spent: Int64,
        currency: String, expiresAt: UInt64, voucher: String)
    {
        self.id = id
        self.instrumentId = instrumentId
        self.state = state
        self.limit = limit
        self.spent = spent
        self.currency = currency
        self.expiresAt = expiresAt
        self.voucher = voucher
    }
}

public struct SettlementBatch: Codable, Sendable, Hashable {
    public struct Item: Codable, Sendable, Hashable {
        public let request: String
        public let acceptance: String

        public init(request: String, acceptance: String) {
            self.request = request
            self.acceptance = acceptance
        }
    }

    public let items: [Item]

    public init(items: [Item]) { self.items = items }
}

public struct SettlementResults: Codable, Sendable, Hashable {
    public struct Item: Codable, Sendable, Hashable {
        /// The merchant the request was signed for and its payment id (a payment id is its merchant's), so that the
        /// stored answer says whose payment each result is. Nil when the item could not even be decoded; answers
        /// stored before they named the merchant have no `merchantId`.
        public let merchantId: String?
        public let paymentId: String?
        public let result: PreAuthorization.Settlement
        /// `settled` and `already_settled`: the ledger-signed receipt (base64), as `GET /v1/payments/{id}` gives it.
        public let receipt: String?

        public init(merchantId: String?, paymentId: String?, result: PreAuthorization.Settlement, receipt: String? = nil) {
            self.merchantId = merchantId
            self.paymentId = paymentId
            self.result = result
            self.receipt = receipt
        }
    }

    public let results: [Item]

    public init(results: [Item]) { self.results = results }
}

/// Every refusal: a stable code, a message for people, and the offending fields.
public struct ErrorBody: Codable, Sendable, Hashable {
    public struct Detail: Codable, Sendable, Hashable {
        public let code: String
        public let message: String
        public let fields: [ValidationError.Field]?
        /// For refusals of a payment: the name from the payment error taxonomy.
        public let paymentError: String?

        public init(code: String, message: String, fields: [ValidationError.Field]?, paymentError: String?) {
            self.code = code
            self.message = message
            self.fields = fields
            self.paymentError = paymentError
        }
    }

    public let error: Detail

    public init(_ error: Detail) { self.error = error }
}

public struct InstrumentList: Codable, Sendable, Hashable {
    public let instruments: [InstrumentResource]

    public init(instruments: [InstrumentResource]) { self.instruments = instruments }
}
