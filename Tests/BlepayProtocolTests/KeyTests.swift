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

    @Test func trustedLedgerKeysAreFoundByKeyID() {
        let current = SigningKey().publicKey
        let previous = SigningKey().publicKey
        let trusted = TrustedLedgerKeys([current, previous])
        #expect(trusted.key(id: TrustedLedgerKeys.keyID(of: previous)) == previous)
        #expect(trusted.key(id: TrustedLedgerKeys.keyID(of: SigningKey().publicKey)) == nil)
        #expect(TrustedLedgerKeys.keyID(of: current).bytes.count == 8)
    }
}
