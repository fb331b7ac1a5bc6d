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

/// A complete online payment with fixed keys: handshake, request, acceptance, result. The committed transcript
/// vector is its output.
struct OnlinePayment {
    struct Step: Codable, Equatable {
        let from: String
        let record: String
    }

    var steps: [Step] = []
    var sessionHash: [UInt8] = []

    static func run() throws -> OnlinePayment {
        var payment = OnlinePayment()
        var (records, business, customer) = try Parties.handshake()
        for (index, record) in records.enumerated() {
            payment.steps.append(Step(from: index == 1 ? "customer" : "business", record: record.encoded.hex))
        }
        let request = Parties.request()
        let requestRecord = try business.seal(.paymentRequest(request))
        guard case .paymentRequest(let received) = try customer.open(requestRecord) else { throw Parties.Unexpected() }
        try customer.verify(received)
        let acceptance = try customer.accept(
            received, tipMinorUnits: 250, instrumentID: "card-1", delegatedInstrument: false,
            at: Parties.now.adding(milliseconds: 5_000), preAuthorization: nil, deviceKey: Parties.deviceKey)
        let acceptanceRecord = try customer.seal(.paymentAcceptance(acceptance))
        guard case .paymentAcceptance(let accepted) = try business.open(acceptanceRecord) else {
            throw Parties.Unexpected()
        }
        try business.verify(accepted, of: request)
        let receipt = try Receipt.settled(
            request, accepted, transactionID: "tx-0001", at: Parties.now.adding(milliseconds: 6_000),
            signedBy: Parties.ledgerKey)
        let resultRecord = try business.seal(
            .paymentResult(PaymentResult(paymentID: request.paymentID, outcome: .finished(receipt))))
        guard case .paymentResult = try customer.open(resultRecord) else { throw Parties.Unexpected() }
        records = [requestRecord, acceptanceRecord, resultRecord]
        for (record, from) in zip(records, ["business", "customer", "business"]) {
            payment.steps.append(Step(from: from, record: record.encoded.hex))
        }
        payment.sessionHash = business.sessionHash.bytes
        return payment
    }
}
