import BlepayProtocol
import TestSupport
import Testing

/// Random messages from a seeded generator: every one round-trips. A truncated encoding is rejected or is itself the
/// canonical encoding of what it decodes to (an optional field cut off). A single-bit flip is rejected or decodes to a
/// valid message that round-trips. Never a crash. The codec has no checksum: integrity is the session AEAD's job.
@Suite struct PropertyTests {
    static let iterations = 2_000

    @Test func randomMessagesRoundTripAndCorruptionIsCaught() throws {
        var generator = SplitMix64(seed: 0xB1E_9A7)
        for iteration in 0..<Self.iterations {
            let message = try RandomMessage.make(&generator)
            let encoded = message.encoded
            #expect(try Message(encoded: encoded) == message, "iteration \(iteration)")
            let cut = Int.random(in: 0..<encoded.count, using: &generator)
            let truncated = Array(encoded.prefix(cut))
            if let decoded = try? Message(encoded: truncated) {
                #expect(decoded.encoded == truncated, "iteration \(iteration), cut at \(cut)")
            }
            var flipped = encoded
            let bit = Int.random(in: 0..<(encoded.count * 8), using: &generator)
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            if let decoded = try? Message(encoded: flipped) {
                #expect(try Message(encoded: decoded.encoded) == decoded, "iteration \(iteration), bit \(bit)")
            }
        }
    }

    @Test func randomFragmentStreamsNeverCrashTheReassembler() {
        var generator = SplitMix64(seed: 42)
        var reassembler = Reassembler()
        let now = ContinuousClock.now
        for _ in 0..<20_000 {
            let size = Int.random(in: 0...40, using: &generator)
            let fragment = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? reassembler.receive(fragment, at: now)
            #expect(reassembler.pendingBytes <= Framing.maximumRecordSize)
        }
    }
}

/// Random but valid messages of every kind.
enum RandomMessage {
    static func make(_ g: inout SplitMix64) throws -> Message {
        let id = PaymentID(bytes32: bytes(16, &g))
        let money = try Money(minorUnits: UInt64.random(in: 1...Money.maximumMinorUnits / 2, using: &g), currency: currency(&g))
        let created = Timestamp(millisecondsSince1970: UInt64.random(in: 0...(1 << 50), using: &g))
        switch Int.random(in: 0..<6, using: &g) {
        case 0:
            return .paymentRequest(try PaymentRequest(
                paymentID: id, amount: money, reference: Bool.random(using: &g) ? text(64, &g) : nil,
                merchantID: "m-\(UInt32.random(in: 0...UInt32.max, using: &g))", merchantName: text(64, &g),
                createdAt: created, expiresAt: created.adding(milliseconds: UInt64.random(in: 1...900_000, using: &g)),
                businessOnline: Bool.random(using: &g), signature: Signature64(bytes(64, &g))))
        case 1:
            let voucher = try PreAuthorizationVoucher(
                voucherID: FixedBytes(bytes(8, &g)), instrumentID: "i.\(UInt16.random(in: 0...9999, using: &g))",
                customerKey: Key32(bytes(32, &g)), limit: money, issuedAt: created, expiresAt: created.adding(milliseconds: 1),
                ledgerKeyID: FixedBytes(bytes(8, &g)), signature: Signature64(bytes(64, &g)))
            return .paymentAcceptance(try PaymentAcceptance(
                paymentID: id, amount: money, tipMinorUnits: UInt64.random(in: 0...100_000, using: &g),
                instrumentID: "card_\(UInt8.random(in: 0...255, using: &g))", delegatedInstrument: Bool.random(using: &g),
                createdAt: created, requestHash: Hash32(bytes(32, &g)), sessionHash: Hash32(bytes(32, &g)),
                customerKey: Key32(bytes(32, &g)),
                preAuthorization: Bool.random(using: &g)
                    ? PreAuthorizationPresentation(voucher: voucher, sequence: UInt32.random(in: 1...1000, using: &g),
                        spentBeforeMinorUnits: money.minorUnits / 2) : nil,
                signature: Signature64(bytes(64, &g))))
        case 2:
            return .cancelPayment(CancelPayment(paymentID: id, reason: PaymentErrorCode.allCases.randomElement(using: &g)!))
        case 3:
            let settled = Bool.random(using: &g)
            let receipt = try Receipt(
                paymentID: id, status: settled ? .settled : .pendingSettlement, transactionID: settled ? "tx-1" : nil,
                amount: money, tipMinorUnits: UInt64.random(in: 0...999, using: &g), issuedAt: created,
                merchantID: "m_\(UInt8.random(in: 0...99, using: &g))", payerKey: Key32(bytes(32, &g)),
                ledgerKeyID: settled ? FixedBytes(bytes(8, &g)) : nil,
                merchantSignature: settled ? nil : Signature64(bytes(64, &g)),
                ledgerSignature: settled ? Signature64(bytes(64, &g)) : nil)
            let outcome: PaymentResult.Outcome = Bool.random(using: &g)
                ? .finished(receipt)
                : .failed(PaymentErrorCode.allCases.randomElement(using: &g)!, detail: Bool.random(using: &g) ? text(128, &g) : nil)
            return .paymentResult(try PaymentResult(paymentID: id, outcome: outcome))
        case 4:
            return .otherPaid(OtherPaid(paymentID: id))
        default:
            return .error(try ErrorMessage(
                code: PaymentErrorCode.allCases.randomElement(using: &g)!, paymentID: Bool.random(using: &g) ? id : nil,
                detail: Bool.random(using: &g) ? text(128, &g) : nil))
        }
    }

    static func bytes(_ count: Int, _ g: inout SplitMix64) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) } }

    static func currency(_ g: inout SplitMix64) throws -> Currency {
        try Currency(["EUR", "USD", "JPY", "KWD", "CLF", "CHF"].randomElement(using: &g)!)
    }

    /// 1 to `limit` printable scalars, some beyond ASCII.
    static func text(_ limit: Int, _ g: inout SplitMix64) -> String {
        let alphabet = Array("abcXYZ 019-_.€üßçñ日本語💶")
        return String((0..<Int.random(in: 1...limit, using: &g)).map { _ in alphabet.randomElement(using: &g)! })
    }
}

extension PaymentID {
    init(bytes32 bytes: [UInt8]) { try! self.init(bytes: bytes) }
}
