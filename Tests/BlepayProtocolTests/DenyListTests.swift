import BlepayProtocol
import Testing

/// The ledger-signed deny list (`docs/protocol.md` §6.7): its canonical encoding, its signature and its age.
@Suite struct DenyListTests {
    static let otherVoucher = try! FixedBytes<Bytes8>(Array(repeating: 0x20, count: 8))
    /// Given out of order and with a repeat: the list keeps them ascending, once.
    static let sample = DenyList(
        issuedAt: Sample.created, voidedVouchers: [otherVoucher, Sample.keyID, otherVoucher], blockedKeys: [Sample.key],
        ledgerKeyID: Sample.keyID, signature: Sample.signature)
    static let empty = DenyList(
        issuedAt: Sample.created, voidedVouchers: [], blockedKeys: [], ledgerKeyID: Sample.keyID, signature: Sample.signature)

    /// The committed vectors (`Vectors/ledger.json`) are what a compatible business must accept.
    @Test func denyListsMatchTheCommittedVectors() throws {
        let vectors = try Vectors.load("ledger.json", as: [String: String].self)
        for (name, list) in [("deny-list", Self.sample), ("deny-list-empty", Self.empty)] {
            let hex = try #require(vectors[name], "no vector for \(name)")
            #expect(list.encoded.hex == hex, "\(name)")
            #expect(try DenyList(encoded: #require([UInt8](hex: hex))) == list, "\(name)")
        }
        #expect(Self.sample.voidedVouchers == [Sample.keyID, Self.otherVoucher])
        #expect(Self.sample.denies(voucher: Self.otherVoucher) && Self.sample.denies(key: Sample.key))
        #expect(!Self.empty.denies(voucher: Sample.keyID) && !Self.empty.denies(key: Sample.key))
    }

    @Test func onlyTheCanonicalEncodingDecodes() throws {
        let signatureField = [100, 64] + Sample.signature.bytes
        let head: [UInt8] = [1, 6] + [0x80, 0xBC, 0xD9, 0xF2, 0x9E, 0x34]
        let keyIDField: [UInt8] = [4, 8] + Sample.keyID.bytes
        #expect(try DenyList(encoded: head + keyIDField + signatureField) == Self.empty)
        // Descending, repeated, empty, or not whole ids.
        let descending = [2, 16] + Self.otherVoucher.bytes + Sample.keyID.bytes
        let repeated = [2, 16] + Sample.keyID.bytes + Sample.keyID.bytes
        #expect(protocolError { _ = try DenyList(encoded: head + descending + keyIDField + signatureField) } == .nonCanonical)
        #expect(protocolError { _ = try DenyList(encoded: head + repeated + keyIDField + signatureField) } == .nonCanonical)
        #expect(protocolError { _ = try DenyList(encoded: head + [3, 0] + keyIDField + signatureField) } == .nonCanonical)
        #expect(protocolError { _ = try DenyList(encoded: head + [2, 7] + Array(repeating: 1, count: 7) + keyIDField + signatureField)
        } == .invalidLength)
        // A signed structure: an unknown field is refused.
        #expect(protocolError { _ = try DenyList(encoded: head + keyIDField + [5, 1, 0] + signatureField) } == .unknownRequiredField)
    }

    @Test func aSignedListVerifiesWithTheLedgerKeyWhileRecent() throws {
        let ledgerKey = try SigningKey(seed: Array(repeating: 4, count: 32))
        let list = try DenyList(
            issuedAt: Sample.created, voidedVouchers: [Sample.keyID], blockedKeys: [Sample.key],
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
        ).signed(by: ledgerKey)
        #expect(list.signingBytes.starts(with: Array("blepay/1 deny-list\0".utf8)))
        let trusted = TrustedLedgerKeys([ledgerKey.publicKey])
        let day: UInt64 = 86_400_000
        try list.verify(trusting: trusted, at: Sample.created.adding(milliseconds: day), maximumAge: day)
        // Too old, from the future, signed by an untrusted key, or changed after signing.
        #expect(protocolError { try list.verify(trusting: trusted, at: Sample.created.adding(milliseconds: 2 * day), maximumAge: day) }
            == .certificateExpired)
        #expect(protocolError {
            try list.verify(trusting: trusted, at: Timestamp(millisecondsSince1970: Sample.created.millisecondsSince1970 - 600_000),
                maximumAge: day)
        } == .certificateExpired)
        let stranger = try SigningKey(seed: Array(repeating: 5, count: 32))
        #expect(protocolError { try list.verify(trusting: TrustedLedgerKeys([stranger.publicKey]), at: Sample.created, maximumAge: day) }
            == .invalidSignature)
        let changed = DenyList(issuedAt: list.issuedAt, voidedVouchers: [], blockedKeys: list.blockedKeys,
            ledgerKeyID: list.ledgerKeyID, signature: list.signature)
        #expect(protocolError { try changed.verify(trusting: trusted, at: Sample.created, maximumAge: day) } == .invalidSignature)
        #expect(protocolError { _ = try list.signed(by: stranger) } == .invalidSignature)
    }
}
