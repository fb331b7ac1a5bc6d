import NIOSSL
import PostgresNIO

/// How the connections to PostgreSQL are protected. `verifyFull` is what a database on another host needs: TLS,
/// a certificate chaining to the configured roots, and the host's name or address in it. `require` only encrypts
/// (anyone on the path can present a certificate); `disable` is for a server on this machine.
public enum PostgresTLSMode: String, Sendable, Hashable, CaseIterable {
    case disable
    case require
    case verifyFull = "verify-full"
}

extension PostgresStorage.Configuration {
    /// The connections' TLS setting; the roots come from `caFile` when set, else from the system.
    func connectionTLS() throws(StorageError) -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        switch self.tls {
        case .disable: return .disable
        case .require: tls.certificateVerification = .none
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            if let caFile {
                do { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                    throw StorageError(.unavailable, "the PostgreSQL CA file \(caFile) is not readable PEM certificates: \(error)")
                }
            }
        }
        do { return .require(try NIOSSLContext(configuration: tls)) } catch {
            throw StorageError(.unavailable, "cannot set up TLS to PostgreSQL: \(error)")
        }
    }
}
