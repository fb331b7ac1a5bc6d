import BlepayProtocol

/// What a transport reports: links that opened (session established), messages received, links that closed.
public enum TransportEvent: Sendable, Hashable {
    case connected(PeerID)
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
