import BlepayPayments
import BlepayProtocol
import Logging
import Synchronization

/// One transport's links by peer, and what their actions do: fragments leave in order through the peer's
/// outbox, an established link and each message become transport events, and a closed link is disconnected
/// once the fragments before the close are out. `Address` is how BlueZ names the other end (its device path).
final class LinkTable<Address: Hashable & Sendable>: Sendable {
    /// What a peer's sender does, in order.
    enum Outgoing: Sendable, Hashable {
        case fragment([UInt8])
        case disconnect
    }

    private struct Peer {
        var link: Link
        let address: Address
        let outbox: AsyncStream<Outgoing>.Continuation
        var reported = false
    }

    private struct State {
        var peers: [PeerID: Peer] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let logger: Logger
    let events: AsyncStream<TransportEvent>

    init(logger: Logger) {
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream()
    }

    var isEmpty: Bool { state.withLock { $0.peers.isEmpty } }

    /// Adds a link under a new peer id. The caller drains the returned outbox: it sends each fragment, and
    /// disconnects at `disconnect` (or when a send fails).
    func add(_ link: Link, at address: Address) -> (PeerID, AsyncStream<Outgoing>) {
        let (outbox, sender) = AsyncStream<Outgoing>.makeStream()
        let peer = state.withLock { state in
            let peer = PeerID(state.next)
            state.next += 1
            state.peers[peer] = Peer(link: link, address: address, outbox: sender)
            return peer
        }
        return (peer, outbox)
    }

    func peer(at address: Address) -> PeerID? {
        state.withLock { $0.peers.first { $0.value.address == address }?.key }
    }

    var peers: [PeerID] { state.withLock { Array($0.peers.keys) } }

    var addresses: [Address] { state.withLock { $0.peers.values.map(\.address) } }

    /// Runs `body` on the peer's link and carries out the actions it returns, under the lock so that events keep
    /// the link's order.
    func update(_ peer: PeerID, _ body: (inout Link) -> [LinkAction]) {
        state.withLock { state in
            guard var entry = state.peers[peer] else { return }
            let actions = body(&entry.link)
            for action in actions {
                switch action {
                case .transmit(let fragment): entry.outbox.yield(.fragment(fragment))
                case .established:
                    guard let session = entry.link.session else { break }
                    entry.reported = true
                    continuation.yield(.connected(peer, PeerSession(session)))
                case .deliver(let message): continuation.yield(.received(peer, message))
                case .close(let reason):
                    logger.info("closing the link", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
                    entry.outbox.yield(.disconnect)
                    entry.outbox.finish()
                }
            }
            state.peers[peer] = entry
        }
    }

    /// Every link's time-outs.
    func tick(at instant: ContinuousClock.Instant) {
        for peer in peers { update(peer) { $0.tick(at: instant) } }
    }

    /// Asks for the peer's disconnection after the fragments already queued.
    func hangUp(_ peer: PeerID) {
        state.withLock { state in
            guard let entry = state.peers[peer] else { return }
            entry.outbox.yield(.disconnect)
            entry.outbox.finish()
        }
    }

    /// The link went down: the peer is forgotten, and `disconnected` reported if `connected` was.
    func remove(_ peer: PeerID) {
        state.withLock { state in
            guard let entry = state.peers.removeValue(forKey: peer) else { return }
            entry.outbox.finish()
            if entry.reported { continuation.yield(.disconnected(peer)) }
        }
    }

    /// Ends the event stream (the transport stopped); every link is forgotten first.
    func finish() {
        for peer in peers { remove(peer) }
        continuation.finish()
    }
}
