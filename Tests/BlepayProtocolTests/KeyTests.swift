import BlepayProtocol
import Testing

@Suite struct KeyTests {
    @Test func signaturesOverSigningBytesVerifyOnlyForThatKeyAndThoseBytes() throws {
        let merchant = SigningKey()
        let other = SigningKey()
        let bytes = Sample.request.signingBytes
        let signature = try merchant.sign(bytes)
        #expect(isValidSignature(signature, of: bytes, by: merchant.publicKey))
        #expect(!isValidSignature(signature, of: bytes, by: other.publicKey))
        #expect(!isValidSignature(signature, of: Sample.acceptance.signingBytes, by: merchant.publicKey))
        #expect(try SigningKey(seed: merchant.seed).publicKey == merchant.publicKey)
        #expect(protocolError { _ = try SigningKey(seed: [1, 2, 3]) } == .invalidLength)
    }

    /// Checking ahead only saves work: every answer is the one `isValidSignature` gives.
    @Test func signaturesCheckedAheadAnswerAsVerifyingWould() throws {
        let merchant = SigningKey()
        let other = SigningKey()
        let bytes = Sample.request.signingBytes
        let signature = try merchant.sign(bytes)
        let forged = try Signature64(Array(repeating: 7, count: 64))
        var checked = CheckedSignatures()
        checked.check(signature, of: bytes, by: merchant.publicKey)
        checked.check(forged, of: bytes, by: merchant.publicKey)
        checked.check(signature, of: bytes, by: other.publicKey)
        #expect(checked.isValid(signature, of: bytes, by: merchant.publicKey))
        #expect(!checked.isValid(forged, of: bytes, by: merchant.publicKey))
        #expect(!checked.isValid(signature, of: bytes, by: other.publicKey))
        #expect(!checked.isValid(signature, of: Sample.acceptance.signingBytes, by: merchant.publicKey))
        let later = try merchant.sign(Sample.acceptance.signingBytes)
        #expect(CheckedSignatures().isValid(later, of: Sample.acceptance.signingBytes, by: merchant.publicKey))
        #expect(!CheckedSignatures().isValid(later, of: bytes, by: merchant.publicKey))
    }

    @Test func trustedLedgerKeysAreFoundByKeyID() {
        let current = SigningKey().publicKey
        let previous = SigningKey().publicKey
        let trusted = TrustedLedgerKeys([current, previous])
        #expect(trusted.key(id: TrustedLedgerKeys.keyID(of: previous)) == previous)
        #expect(trusted.key(id: TrustedLedgerKeys.keyID(of: SigningKey().publicKey)) == nil)
        #expect(TrustedLedgerKeys.keyID(of: current).bytes.count == 8)
    }
}
