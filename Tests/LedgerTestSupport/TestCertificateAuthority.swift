import Crypto
import Foundation
import SwiftASN1
import X509

/// A throwaway certificate authority for tests, with the ledger certificates it issues for `localhost`,
/// 127.0.0.1 and ::1: PEM files in a temporary directory of its own, as an operator would have them.
public struct TestCertificateAuthority: Sendable {
    /// A server certificate and its key, as files.
    public struct Issued: Sendable {
        public let certificateFile: String
        public let keyFile: String
        /// The SHA-256 of its SubjectPublicKeyInfo, as `[ledger] certificate_pin` takes it.
        public let pin: [UInt8]
        public let serial: [UInt8]
    }

    public let directory: String
    /// The CA's certificate, as `[ledger] ca_file` takes it.
    public let caFile: String
    private let name: DistinguishedName
    private let key: P256.Signing.PrivateKey

    public init(name: String = "blepay test CA") throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        caFile = (directory as NSString).appendingPathComponent("ca.pem")
        self.name = try DistinguishedName { CommonName(name) }
        key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date() - 3600,
            notValidAfter: Date() + 86_400, issuer: self.name, subject: self.name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key))
        try Self.write(try certificate.serializeAsPEM().pemString, to: caFile)
    }

    /// A new key and a certificate for it, written over `<name>.crt` and `<name>.key` (each replaced whole, as a
    /// renewal would be).
    public func issue(_ name: String = "ledger") throws -> Issued {
        let serverKey = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(serverKey.publicKey), notValidBefore: Date() - 3600,
            notValidAfter: Date() + 86_400, issuer: self.name, subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                    .ipAddress(ASN1OctetString(contentBytes: ArraySlice(Array(repeating: 0, count: 15) + [1]))),
                ])
            },
            issuerPrivateKey: .init(key))
        let issued = Issued(
            certificateFile: (directory as NSString).appendingPathComponent("\(name).crt"),
            keyFile: (directory as NSString).appendingPathComponent("\(name).key"),
            pin: Array(SHA256.hash(data: serverKey.publicKey.derRepresentation)), serial: Array(certificate.serialNumber.bytes))
        try Self.write(serverKey.pemRepresentation, to: issued.keyFile)
        try Self.write(try certificate.serializeAsPEM().pemString, to: issued.certificateFile)
        return issued
    }

    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Written beside, then renamed into place: a reader sees the old file or the new one, never half of one.
    private static func write(_ text: String, to path: String) throws {
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
            rename(temporary, path) == 0
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }
}
