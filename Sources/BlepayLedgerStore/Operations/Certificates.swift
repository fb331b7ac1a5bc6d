import BlepayLedger
import BlepayProtocol
import Foundation

/// Merchant certificates: issued at a business device's enrollment, and renewed by the device before they expire.
extension LedgerOperations {
    /// A certificate binding a business device's keys to its merchant, valid from `now` for the configured
    /// lifetime, signed by the active ledger key.
    func issueCertificate(merchant: String, name: String, signingKey: Key32, noiseKey: Key32, at now: Timestamp)
        throws(APIError) -> MerchantCertificate
    {
        let ledgerKey = ledgerKey
        let lifetime = certificateLifetimeMilliseconds
        return try Self.decode("certificate") { () throws(ProtocolError) in
            try MerchantCertificate(
                merchantID: merchant, merchantName: name, signingKey: signingKey, noiseKey: noiseKey,
                validFrom: now, validUntil: now.adding(milliseconds: lifetime),
                ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
            ).signed(by: ledgerKey)
        }
    }

    /// A fresh certificate for the calling business device's registered keys, under its merchant's current name:
    /// what the business presents from its next handshake on. The device's record keeps the newest one.
    public func renewCertificate(_ tx: any SQLTransaction, device: Device, at now: Timestamp) throws -> CertificateResource {
        guard device.accountKind == .merchant,
            let row = try tx.row(
                "SELECT d.noise_key, a.name FROM devices d JOIN accounts a ON a.id = d.account WHERE d.id = ?",
                [.text(device.id)]),
            let noiseKey = try? Key32(try row.blob(0))
        else {
            throw APIError.forbidden("only a business device has a merchant certificate")
        }
        let certificate = try issueCertificate(
            merchant: device.account, name: try row.text(1), signingKey: device.signingKey, noiseKey: noiseKey, at: now)
        try tx.run("UPDATE devices SET certificate = ? WHERE id = ?", [.blob(certificate.encoded), .text(device.id)])
        return CertificateResource(certificate: Data(certificate.encoded).base64EncodedString())
    }
}
