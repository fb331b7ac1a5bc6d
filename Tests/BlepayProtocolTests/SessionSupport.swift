import BlepayProtocol
import Crypto

/// Fixed keys for the session tests and the transcript vector.
enum Parties {
    static func x25519(_ byte: UInt8) -> Curve25519.KeyAgreement.PrivateKey {
        try! .init(rawRepresentation: [UInt8](repeating: byte, count: 32))
    }

    static let ledgerKey = try! SigningKey(seed: [UInt8](repeating: 0x01, count: 32))
    static let merchantKey = try! SigningKey(seed: [UInt8](repeating: 0x02, count: 32))
    static let businessStatic = x25519(0x03)
    static let businessEphemeral = x25519(0x04)
    static let customerStatic = x25519(0x05)
    static let customerEphemeral = x25519(0x06)
    static let deviceKey = try! SigningKey(seed: [UInt8](repeating: 0x07, count: 32))
    static let trusted = TrustedLedgerKeys([ledgerKey.publicKey])
    static let now = Sample.created
    static let info = try! ProtocolInfo(versions: [1], capabilities: [.online], maximumMessageSize: 4079)

    static func certificate(
        noiseKey: Curve25519.KeyAgreement.PrivateKey = businessStatic, ledger: SigningKey = ledgerKey,
        validFrom: Timestamp = Sample.created, days: UInt64 = 365
    ) -> MerchantCertificate {
        try! MerchantCertificate(
            merchantID: "m_cafe.42", merchantName: "Café Zürich", signingKey: merchantKey.publicKey,
            noiseKey: Key32(Array(noiseKey.publicKey.rawRepresentation)), validFrom: validFrom,
            validUntil: validFrom.adding(milliseconds: days * 86_400_000),
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledger.publicKey), signature: Sample.signature
        ).signed(by: ledger)
    }

    static func request(id: PaymentID = Sample.paymentID, signedBy key: SigningKey = merchantKey) -> PaymentRequest {
        try! Sample.request.withID(id).signed(by: key)
    }

    /// The third use of a 100.00 EUR voucher the ledger issued to the device key, 12.00 spent before.
    static func presentation() throws -> PreAuthorizationPresentation {
        let voucher = try PreAuthorizationVoucher(
            voucherID: Sample.keyID, instrumentID: "card-1", customerKey: deviceKey.publicKey,
            limit: Money(minorUnits: 10_000, currency: Sample.eur), issuedAt: now,
            expiresAt: now.adding(milliseconds: 86_400_000), ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey),
            signature: .unsigned
        ).signed(by: ledgerKey)
        return try PreAuthorizationPresentation(voucher: voucher, sequence: 3, spentBeforeMinorUnits: 1_200)
    }

    static func business(
        static key: Curve25519.KeyAgreement.PrivateKey = businessStatic, certificate: MerchantCertificate? = nil,
        versions: [UInt8] = [1], info: [UInt8] = Parties.info.encoded
    ) throws -> BusinessHandshake {
        try BusinessHandshake(
            staticKey: key, certificate: certificate ?? Parties.certificate(noiseKey: key), versions: versions,
            customerInfo: info, ephemeralKey: businessEphemeral)
    }

    static func customer(info: ProtocolInfo = Parties.info, trusting: TrustedLedgerKeys = trusted) -> CustomerHandshake {
        CustomerHandshake(staticKey: customerStatic, info: info, trusting: trusting, ephemeralKey: customerEphemeral)
    }

    /// Runs the handshake to the end; returns the four records and both sessions.
    static func handshake(
        business: BusinessHandshake? = nil, customer: CustomerHandshake? = nil, at now: Timestamp = Parties.now
    ) throws -> (records: [Record], business: SecureSession, customer: SecureSession) {
        var business = try business ?? Parties.business()
        var customer = customer ?? Parties.customer()
        let first = try business.start()
        guard case .reply(let second) = try customer.receive(first, at: now) else { throw Unexpected() }
        let (third, businessSession) = try business.receive(second)
        guard case .established(let customerSession) = try customer.receive(third, at: now) else { throw Unexpected() }
        return ([first, second, third], businessSession, customerSession)
    }

    struct Unexpected: Error {}
}

extension PaymentRequest {
    func withID(_ id: PaymentID) -> PaymentRequest {
        try! PaymentRequest(
            paymentID: id, amount: amount, reference: reference, merchantID: merchantID, merchantName: merchantName,
            createdAt: createdAt, expiresAt: expiresAt, businessOnline: businessOnline, signature: signature)
    }
}

/// A complete payment with fixed keys: handshake, request, acceptance, result. The committed transcript vector is
/// the output of the online one (the business executes); the other executors' are measured, not committed.
struct OnlinePayment {
    struct Step: Codable, Equatable {
        let from: String
        let record: String
    }

    /// Who executes (`docs/protocol.md` §6.4a).
    enum Executor {
        /// Online: the business, which sends the ledger's receipt.
        case business
        /// The business offline: its go-ahead, then the customer sends the ledger's receipt.
        case customer
        /// Both offline: the acceptance presents a voucher; the business's signed acknowledgement comes back.
        case voucher
    }

    var steps: [Step] = []
    var sessionHash: [UInt8] = []

    static func run(_ executor: Executor = .business) throws -> OnlinePayment {
        var payment = OnlinePayment()
        var (records, business, customer) = try Parties.handshake()
        for (index, record) in records.enumerated() {
            payment.steps.append(Step(from: index == 1 ? "customer" : "business", record: record.encoded.hex))
        }
        let request = executor == .business ? Parties.request() : try Parties.request().offline()
        let requestRecord = try business.seal(.paymentRequest(request))
        guard case .paymentRequest(let received) = try customer.open(requestRecord) else { throw Parties.Unexpected() }
        try customer.verify(received)
        let acceptance = try customer.accept(
            received, tipMinorUnits: 250, instrumentID: "card-1", delegatedInstrument: false,
            at: Parties.now.adding(milliseconds: 5_000),
            preAuthorization: executor == .voucher ? try Parties.presentation() : nil, deviceKey: Parties.deviceKey)
        let acceptanceRecord = try customer.seal(.paymentAcceptance(acceptance))
        guard case .paymentAcceptance(let accepted) = try business.open(acceptanceRecord) else {
            throw Parties.Unexpected()
        }
        try business.verify(accepted, of: request)
        let receipt = executor == .voucher
            ? try Receipt.pending(request, accepted, at: Parties.now.adding(milliseconds: 6_000), signedBy: Parties.merchantKey)
            : try Receipt.settled(
                request, accepted, transactionID: "tx-0001", at: Parties.now.adding(milliseconds: 6_000),
                signedBy: Parties.ledgerKey)
        let result = Message.paymentResult(try PaymentResult(paymentID: request.paymentID, outcome: .finished(receipt)))
        if executor == .customer {
            let goAhead = try business.seal(.goAhead(GoAhead(paymentID: request.paymentID, acceptanceHash: accepted.hash)))
            guard case .goAhead = try customer.open(goAhead) else { throw Parties.Unexpected() }
            let resultRecord = try customer.seal(result)
            guard case .paymentResult = try business.open(resultRecord) else { throw Parties.Unexpected() }
            records = [requestRecord, acceptanceRecord, goAhead, resultRecord]
        } else {
            let resultRecord = try business.seal(result)
            guard case .paymentResult = try customer.open(resultRecord) else { throw Parties.Unexpected() }
            records = [requestRecord, acceptanceRecord, resultRecord]
        }
        let senders = executor == .customer ? ["business", "customer", "business", "customer"] : ["business", "customer", "business"]
        for (record, from) in zip(records, senders) {
            payment.steps.append(Step(from: from, record: record.encoded.hex))
        }
        payment.sessionHash = business.sessionHash.bytes
        return payment
    }
}

extension PaymentRequest {
    /// The same request, signed as made while the business could not reach the ledger.
    func offline() throws -> PaymentRequest {
        try PaymentRequest(
            paymentID: paymentID, amount: amount, reference: reference, merchantID: merchantID, merchantName: merchantName,
            createdAt: createdAt, expiresAt: expiresAt, businessOnline: false, signature: .unsigned
        ).signed(by: Parties.merchantKey)
    }
}
