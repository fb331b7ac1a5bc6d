import BlepayProtocol
import Foundation

/// A signed request and acceptance as a real payment carries them.
enum Fixtures {
    static let merchantKey = SigningKey()
    static let deviceKey = SigningKey()
    static let created = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    static let request: PaymentRequest = try! PaymentRequest(
        paymentID: .random(), amount: Money(minorUnits: 2550, currency: Currency("EUR")), reference: "order-123",
        merchantID: "m_cafe.42", merchantName: "Café Zürich", createdAt: created,
        expiresAt: created.adding(milliseconds: 120_000), businessOnline: true,
        signature: .unsigned
    ).signed(by: merchantKey)

    /// The same request from a business that cannot reach the ledger.
    static let offlineRequest: PaymentRequest = try! PaymentRequest(
        paymentID: .random(), amount: request.amount, reference: request.reference, merchantID: request.merchantID,
        merchantName: request.merchantName, createdAt: created, expiresAt: request.expiresAt, businessOnline: false,
        signature: .unsigned
    ).signed(by: merchantKey)

    static let acceptance: PaymentAcceptance = try! PaymentAcceptance(
        paymentID: request.paymentID, amount: request.amount, tipMinorUnits: 250, instrumentID: "card-1",
        delegatedInstrument: false, createdAt: created.adding(milliseconds: 5_000), requestHash: request.hash,
        sessionHash: Hash32(Array(repeating: 0x5A, count: 32)), customerKey: deviceKey.publicKey,
        preAuthorization: nil, signature: .unsigned
    ).signed(by: deviceKey)
}
