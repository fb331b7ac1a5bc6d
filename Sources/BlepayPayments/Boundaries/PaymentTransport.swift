import BlepayProtocol

/// What a peer's completed handshake established, handed to the machines with `connected`: everything a payment on
/// that connection is bound to or checked against, so that no machine or driver reaches back into the transport.
public struct PeerSession: Sendable, Hashable {
    public let version: UInt8
    /// The Noise handshake hash: acceptances are bound to it, so they cannot be replayed in another session.
    public let sessionHash: Hash32
    /// The customer's capabilities, as the handshake settled them (online, holding a pre-authorization).
    public let capabilities: Capabilities
    /// The business's merchant certificate, verified by the customer against its trusted ledger keys.
    public let certificate: MerchantCertificate

    public init(version: UInt8, sessionHash: Hash32, capabilities: Capabilities, certificate: MerchantCertificate) {
        self.version = version
        self.sessionHash = sessionHash
        self.capabilities = capabilities
        self.certificate = certificate
    }

    public init(_ session: SecureSession) {
        self.init(
            version: session.version, sessionHash: session.sessionHash, capabilities: session.capabilities,
            certificate: session.certificate)
    }
}

/// What a transport reports: links that opened (session established), messages received, links that closed.
public enum TransportEvent: Sendable, Hashable {
    case connected(PeerID, PeerSession)
    case received(PeerID, Message)
    case disconnected(PeerID)
}

/// Messages in and out per peer, over authenticated sessions: the BLE transport frames and encrypts them (see
/// `docs/protocol.md`); the in-memory one carries their encodings. `send` and `disconnect` only enqueue, so the
/// order of a driver's actions is the order on the link.
public protocol PaymentTransport: Sendable {
    var events: AsyncStream<TransportEvent> { get }
    func send(_ message: Message, to peer: PeerID)
    func disconnect(_ peer: PeerID)
}
