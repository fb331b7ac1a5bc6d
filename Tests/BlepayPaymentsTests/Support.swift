import BlepayPayments
import BlepayProtocol

/// Fixed values for the payment tests. Signatures are placeholders: checking them is the session layer's job,
/// stood in for here by `Verifier`.
enum Fixture {
    static let eur = try! Currency("EUR")
    static let usd = try! Currency("USD")
    static let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    static let lifetime: UInt64 = 120_000
    static let signature = try! Signature64(Array(repeating: 0, count: 64))
    static let hash = try! Hash32(Array(repeating: 0, count: 32))
    static let key = try! Key32(Array(repeating: 1, count: 32))
    /// The merchant's signing key, which its certificate vouches for.
    static let merchantKey = SigningKey()

    static func id(_ n: UInt8) -> PaymentID { try! PaymentID(bytes: Array(repeating: n, count: 16)) }

    static func money(_ minor: UInt64, _ currency: Currency = eur) -> Money {
        try! Money(minorUnits: minor, currency: currency)
    }

    static func request(_ n: UInt8 = 1, amount: UInt64 = 2550, at t: Timestamp = t0) -> PaymentRequest {
        try! PaymentRequest(
            paymentID: id(n), amount: money(amount), reference: "order-\(n)", merchantID: "m_cafe.42",
            merchantName: "Café", createdAt: t, expiresAt: t.adding(milliseconds: lifetime), businessOnline: true,
            signature: signature)
    }

    static func acceptance(
        of request: PaymentRequest, amount: Money? = nil, tip: UInt64 = 0, instrument: String = "card-1"
    ) -> PaymentAcceptance {
        try! PaymentAcceptance(
            paymentID: request.paymentID, amount: amount ?? request.amount, tipMinorUnits: tip, instrumentID: instrument,
            delegatedInstrument: false, createdAt: t0, requestHash: hash, sessionHash: hash, customerKey: key,
            preAuthorization: nil, signature: signature)
    }

    static func receipt(for acceptance: PaymentAcceptance) -> Receipt {
        try! Receipt(
            paymentID: acceptance.paymentID, status: .settled, transactionID: "tx-1", amount: acceptance.amount,
            tipMinorUnits: acceptance.tipMinorUnits, issuedAt: t0, merchantID: "m_cafe", payerKey: acceptance.customerKey,
            ledgerKeyID: FixedBytes(Array(repeating: 1, count: 8)), ledgerSignature: signature)
    }

    /// A customer trusting `ledgerKey` that accepted request 1 from peer 1 with `a1`'s terms (tip 100) and sent it.
    static func customerWhoAccepted(trusting ledgerKey: SigningKey) throws -> CustomerMachine {
        let r = request(1)
        var m = CustomerMachine(ledgerKeys: TrustedLedgerKeys([ledgerKey.publicKey]))
        m.start()
        _ = m.connected(PeerID(1), session)
        _ = m.receive(.paymentRequest(r), from: PeerID(1), at: t0)
        _ = try m.accept(r.paymentID, amount: r.amount, terms: terms(tip: 100))
        _ = m.acceptanceSigned(acceptance(of: r, tip: 100))
        return m
    }

    /// Another customer's acceptance of `r`, signed by a key of its own.
    static func otherPayersAcceptance(of r: PaymentRequest) throws -> PaymentAcceptance {
        try PaymentAcceptance(
            paymentID: r.paymentID, amount: r.amount, tipMinorUnits: 0, instrumentID: "card-9", delegatedInstrument: false,
            createdAt: t0, requestHash: hash, sessionHash: hash, customerKey: SigningKey().publicKey,
            preAuthorization: nil, signature: signature)
    }

    static func terms(tip: UInt64 = 0, at t: Timestamp = t0) -> AcceptanceTerms {
        AcceptanceTerms(tipMinorUnits: tip, instrumentID: "card-1", delegatedInstrument: false, acceptedAt: t)
    }

    static func later(_ ms: UInt64) -> Timestamp { t0.adding(milliseconds: ms) }

    static let certificate = try! MerchantCertificate(
        merchantID: "m_cafe.42", merchantName: "Café", signingKey: merchantKey.publicKey, noiseKey: key, validFrom: t0,
        validUntil: later(3_600_000), ledgerKeyID: FixedBytes<Bytes8>(Array(repeating: 2, count: 8)), signature: signature)
    static let session = PeerSession(version: 1, sessionHash: hash, capabilities: [.online], certificate: certificate)
}

/// Accepts every acceptance except those whose instrument id starts with `forged`.
struct Verifier: AcceptanceVerifier {
    func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, session: PeerSession) -> PaymentError? {
        acceptance.instrumentID.hasPrefix("forged") ? PaymentError(.securityFailure, "bad signature") : nil
    }
}

extension Array where Element == BusinessAction {
    var events: [BusinessEvent] { compactMap { if case .emit(let e) = $0 { e } else { nil } } }
    var sent: [(PeerID, Message)] { compactMap { if case .send(let p, let m) = $0 { (p, m) } else { nil } } }
    func messages(to peer: PeerID) -> [Message] { sent.filter { $0.0 == peer }.map(\.1) }
    var executions: [PaymentAcceptance] { compactMap { if case .execute(_, let a) = $0 { a } else { nil } } }
}

extension Array where Element == CustomerAction {
    var events: [CustomerEvent] { compactMap { if case .emit(let e) = $0 { e } else { nil } } }
    var sent: [(PeerID, Message)] { compactMap { if case .send(let p, let m) = $0 { (p, m) } else { nil } } }
}

func paymentError(_ body: () throws -> Void) -> PaymentErrorCode? {
    do {
        try body()
        return nil
    } catch { return (error as? PaymentError)?.code }
}
