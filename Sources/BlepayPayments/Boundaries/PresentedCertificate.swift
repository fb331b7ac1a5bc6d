import BlepayProtocol
import Synchronization

/// The merchant certificate a business presents in its handshakes, shared by its transport (which reads it at each
/// new handshake) and its renewal (which replaces it), so that a renewed certificate is shown from the next
/// handshake on without a restart. Sessions already established keep the certificate they were shown.
public final class PresentedCertificate: Sendable {
    private let certificate: Mutex<MerchantCertificate>

    public init(_ certificate: MerchantCertificate) { self.certificate = Mutex(certificate) }

    public var current: MerchantCertificate { certificate.withLock { $0 } }

    public func replace(with certificate: MerchantCertificate) { self.certificate.withLock { $0 = certificate } }
}
