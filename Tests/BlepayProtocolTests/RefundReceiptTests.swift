import BlepayProtocol
import Testing

/// The ledger-signed refund receipt (`docs/protocol.md` §6.7): its canonical encoding, its limits and its signature.
@Suite struct RefundReceiptTests {
    static func sample(reason: String? = "Wrong size", signature: Signature64 = Sample.signature) throws -> RefundReceipt {
        try RefundReceipt(
            refundID: "rfd_0102030405", paymentID: Sample.paymentID, merchantID: "acc_cafe", payerKey: Sample.key,
            amount: Money(minorUnits: 250, currency: Sample.eur), refundedMinorUnits: 400, paidMinorUnits: 1_150,
            reason: reason, issuedAt: Sample.created, ledgerKeyID: Sample.keyID, signature: signature)
    }

    /// The committed vectors (`Vectors/ledger.json`) are what a compatible peer must produce and accept.
    @Test func refundReceiptsMatchTheCommittedVectors() throws {
        let vectors = try Vectors.load("ledger.json", as: [String: String].self)
        for (name, receipt) in [("refund-receipt", try Self.sample()), ("refund-receipt-no-reason", try Self.sample(reason: nil))] {
            let hex = try #require(vectors[name], "no vector for \(name)")
            #expect(receipt.encoded.hex == hex, "\(name)")
            #expect(try RefundReceipt(encoded: #require([UInt8](hex: hex))) == receipt, "\(name)")
        }
    }

    @Test func onlyACanonicalWellFormedReceiptDecodes() throws {
        let encoded = try Self.sample().encoded
        // Cut short, trailing bytes, an unknown field in a signed structure, a field out of order.
        #expect(protocolError { _ = try RefundReceipt(encoded: Array(encoded.dropLast())) } != nil)
        #expect(protocolError { _ = try RefundReceipt(encoded: encoded + [0]) } != nil)
        #expect(protocolError { _ = try RefundReceipt(encoded: Array(encoded.dropLast(66)) + [12, 1, 0] + encoded.suffix(66)) }
            == .unknownRequiredField)
        let refundField = Array(encoded.prefix(16))
        let paymentField = Array(encoded[16..<34])
        #expect(protocolError { _ = try RefundReceipt(encoded: paymentField + refundField + encoded.dropFirst(34)) } == .nonCanonical)
        // Amounts that cannot be: nothing refunded, more than the refunds so far, refunds past what was paid.
        #expect(protocolError {
            _ = try RefundReceipt(refundID: "r", paymentID: Sample.paymentID, merchantID: "m", payerKey: Sample.key,
                amount: Money(minorUnits: 0, currency: Sample.eur), refundedMinorUnits: 0, paidMinorUnits: 10, reason: nil,
                issuedAt: Sample.created, ledgerKeyID: Sample.keyID, signature: Sample.signature)
        } == .invalidAmount)
        #expect(protocolError {
            _ = try RefundReceipt(refundID: "r", paymentID: Sample.paymentID, merchantID: "m", payerKey: Sample.key,
                amount: Money(minorUnits: 5, currency: Sample.eur), refundedMinorUnits: 11, paidMinorUnits: 10, reason: nil,
                issuedAt: Sample.created, ledgerKeyID: Sample.keyID, signature: Sample.signature)
        } == .invalidAmount)
        // A reason with hidden formatting, or too long; an id that is not an identifier.
        #expect(protocolError { _ = try Self.sample(reason: "a\u{202E}b") } == .invalidValue)
        #expect(protocolError { _ = try Self.sample(reason: String(repeating: "x", count: 141)) } == .stringTooLong)
        #expect(protocolError {
            _ = try RefundReceipt(refundID: "not an id", paymentID: Sample.paymentID, merchantID: "m", payerKey: Sample.key,
                amount: Money(minorUnits: 5, currency: Sample.eur), refundedMinorUnits: 5, paidMinorUnits: 10, reason: nil,
                issuedAt: Sample.created, ledgerKeyID: Sample.keyID, signature: Sample.signature)
        } != nil)
    }

    @Test func aSignedReceiptVerifiesWithTheLedgerKeyOnly() throws {
        let ledgerKey = try SigningKey(seed: Array(repeating: 4, count: 32))
        let unsigned = try RefundReceipt(
            refundID: "rfd_1", paymentID: Sample.paymentID, merchantID: "acc_cafe", payerKey: Sample.key,
            amount: Money(minorUnits: 250, currency: Sample.eur), refundedMinorUnits: 250, paidMinorUnits: 1_000,
            reason: nil, issuedAt: Sample.created, ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey),
            signature: .unsigned)
        let receipt = try unsigned.signed(by: ledgerKey)
        #expect(receipt.signingBytes.starts(with: Array("blepay/1 refund-receipt\0".utf8)))
        let trusted = TrustedLedgerKeys([ledgerKey.publicKey])
        try receipt.verify(trusting: trusted)
        try RefundReceipt(encoded: receipt.encoded).verify(trusting: trusted)
        // Tampered after signing, signed by a key not trusted, or signed by a key it does not name.
        var tampered = receipt.encoded
        tampered[tampered.count - 1] ^= 1
        #expect(protocolError { try RefundReceipt(encoded: tampered).verify(trusting: trusted) } == .invalidSignature)
        let changed = try RefundReceipt(
            refundID: receipt.refundID, paymentID: receipt.paymentID, merchantID: receipt.merchantID, payerKey: receipt.payerKey,
            amount: Money(minorUnits: 251, currency: Sample.eur), refundedMinorUnits: 251, paidMinorUnits: 1_000, reason: nil,
            issuedAt: receipt.issuedAt, ledgerKeyID: receipt.ledgerKeyID, signature: receipt.signature)
        #expect(protocolError { try changed.verify(trusting: trusted) } == .invalidSignature)
        let stranger = try SigningKey(seed: Array(repeating: 5, count: 32))
        #expect(protocolError { try receipt.verify(trusting: TrustedLedgerKeys([stranger.publicKey])) } == .invalidSignature)
        #expect(protocolError { _ = try unsigned.signed(by: stranger) } == .invalidSignature)
    }
}
