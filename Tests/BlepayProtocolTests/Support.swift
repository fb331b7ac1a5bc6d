import BlepayProtocol
import Foundation
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
        tipMinorUnits: 250, issuedAt: created.adding(milliseconds: 6_000), ledgerSignature: signature)
    static let pendingReceipt = try! Receipt(
        paymentID: paymentID, status: .pendingSettlement, transactionID: nil,
        amount: Money(minorUnits: 2550, currency: eur), tipMinorUnits: 0, issuedAt: created, ledgerSignature: nil)
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
    ]
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }

    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }
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

/// SplitMix64: a small seeded generator, so a failing random case can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
