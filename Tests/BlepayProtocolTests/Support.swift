import BlepayProtocol
import Foundation
import TestSupport
import Testing

/// Fixed sample values: the committed vectors are their encodings.
enum Sample {
    static let eur = try! Currency("EUR")
    static let jpy = try! Currency("JPY")
    static let paymentID = try! PaymentID(bytes: Array(0x10...0x1F))
    static let created = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    static let key = try! Key32(Array(repeating: 0xA1, count: 32))
    static let hash = try! Hash32(Array(repeating: 0xB2, count: 32))
    static let signature = try! Signature64(Array(repeating: 0xC3, count: 64))
    static let keyID = try! FixedBytes<Bytes8>(Array(1...8))

    static let request = try! PaymentRequest(
        paymentID: paymentID, amount: Money(minorUnits: 2550, currency: eur), reference: "order-123",
        merchantID: "m_cafe.42", merchantName: "Café Zürich", createdAt: created,
        expiresAt: created.adding(milliseconds: 120_000), businessOnline: true, signature: signature)
    static let voucher = try! PreAuthorizationVoucher(
        voucherID: keyID, instrumentID: "card-1", customerKey: key, limit: Money(minorUnits: 10_000, currency: eur),
        issuedAt: created, expiresAt: created.adding(milliseconds: 86_400_000), ledgerKeyID: keyID, signature: signature)
    static let acceptance = try! PaymentAcceptance(
        paymentID: paymentID, amount: Money(minorUnits: 2550, currency: eur), tipMinorUnits: 250,
        instrumentID: "card-1", delegatedInstrument: false, createdAt: created.adding(milliseconds: 5_000),
        requestHash: hash, sessionHash: hash, customerKey: key, preAuthorization: nil, signature: signature)
    static let offlineAcceptance = try! PaymentAcceptance(
        paymentID: paymentID, amount: Money(minorUnits: 2550, currency: eur), tipMinorUnits: 0,
        instrumentID: "card-1", delegatedInstrument: true, createdAt: created.adding(milliseconds: 5_000),
        requestHash: hash, sessionHash: hash, customerKey: key,
        preAuthorization: PreAuthorizationPresentation(voucher: voucher, sequence: 3, spentBeforeMinorUnits: 1200),
        signature: signature)
    static let receipt = try! Receipt(
        paymentID: paymentID, status: .settled, transactionID: "tx-0001", amount: Money(minorUnits: 2550, currency: eur),
        tipMinorUnits: 250, issuedAt: created.adding(milliseconds: 6_000), merchantID: "m_cafe.42", payerKey: key,
        ledgerKeyID: keyID, ledgerSignature: signature)
    static let pendingReceipt = try! Receipt(
        paymentID: paymentID, status: .pendingSettlement, transactionID: nil,
        amount: Money(minorUnits: 2550, currency: eur), tipMinorUnits: 0, issuedAt: created, merchantID: "m_cafe.42",
        payerKey: key, ledgerKeyID: nil, merchantSignature: signature, ledgerSignature: nil)
    static let certificate = try! MerchantCertificate(
        merchantID: "m_cafe.42", merchantName: "Café Zürich", signingKey: key, noiseKey: key, validFrom: created,
        validUntil: created.adding(milliseconds: 31_536_000_000), ledgerKeyID: keyID, signature: signature)

    /// Every message kind and shape, named for the vectors file.
    static let messages: [(String, Message)] = [
        ("payment-request", .paymentRequest(request)),
        ("payment-acceptance", .paymentAcceptance(acceptance)),
        ("payment-acceptance-offline", .paymentAcceptance(offlineAcceptance)),
        ("cancel-payment", .cancelPayment(CancelPayment(paymentID: paymentID, reason: .userCancelled))),
        ("payment-result-settled", .paymentResult(try! PaymentResult(paymentID: paymentID, outcome: .finished(receipt)))),
        ("payment-result-pending", .paymentResult(try! PaymentResult(paymentID: paymentID, outcome: .finished(pendingReceipt)))),
        ("payment-result-failed", .paymentResult(try! PaymentResult(
            paymentID: paymentID, outcome: .failed(.insufficientFunds, detail: "balance 10.00 EUR")))),
        ("other-paid", .otherPaid(OtherPaid(paymentID: paymentID))),
        ("error", .error(try! ErrorMessage(code: .versionMismatch, paymentID: nil, detail: "versions 1"))),
        ("go-ahead", .goAhead(GoAhead(paymentID: paymentID, acceptanceHash: hash))),
        ("result-query", .resultQuery(ResultQuery(paymentID: paymentID, acceptanceHash: hash))),
    ]
}


/// The code of the `ProtocolError` `body` throws, or nil (also for any other error, which no API here throws).
func protocolError(_ body: () throws -> Void) -> ProtocolError.Code? {
    do {
        try body()
        return nil
    } catch { return (error as? ProtocolError)?.code }
}

enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors")

    static func load<T: Decodable>(_ name: String, as: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: directory.appendingPathComponent(name)))
    }
}
