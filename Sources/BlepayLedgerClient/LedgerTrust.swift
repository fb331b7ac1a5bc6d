import BlepayLedger
import Crypto
import Foundation
import NIOSSL

/// Which ledger servers a client believes: certificates that chain to the system's roots, or to a CA file's
/// instead; and, with a pin, only a server whose certificate carries the pinned public key, even if another
/// certificate's chain is valid.
public struct LedgerTrust: Sendable, Hashable {
    /// PEM roots trusted instead of the system's.
    public var caFile: String?
    /// The SHA-256 of the server certificate's SubjectPublicKeyInfo.
    public var pin: [UInt8]?

    public init(caFile: String? = nil, pin: [UInt8]? = nil) {
        self.caFile = caFile
        self.pin = pin
    }

    /// The pin of `certificate`'s public key.
    public static func pin(of certificate: NIOSSLCertificate) throws -> [UInt8] {
        Array(SHA256.hash(data: try certificate.extractPublicKey().toSPKIBytes()))
    }

    /// The TLS settings for the ledger: TLS 1.2 or later, the chain and the server's name or address verified.
    func context() throws(LedgerClientError) -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.certificateVerification = .fullVerification
        if let caFile {
            do { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                throw .tlsFailed("the CA file \(caFile) is not readable PEM certificates: \(error)")
            }
        }
        do { return try NIOSSLContext(configuration: tls) } catch {
            throw .tlsFailed("cannot set up TLS: \(error)")
        }
    }
}
