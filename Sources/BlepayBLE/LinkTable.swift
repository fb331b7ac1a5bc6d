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
        /// Closed by its link or hung up: nothing more is taken from the peer, and its outbox has ended.
        var closing = false
        /// When the session was established or last delivered a message.
        var lastHeard: ContinuousClock.Instant?
    }

    private struct State {
        var peers: [PeerID: Peer] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let logger: Logger
    let events: AsyncStream<TransportEvent>
    /// Rung whenever a link may have a new deadline (added, or given an input): the transport's `keepTime` sleeps
    /// on it between deadlines.
    let wakeup = Wakeup()

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
        wakeup.signal()
        return (peer, outbox)
    }

    func peer(at address: Address) -> PeerID? {
        state.withLock { $0.peers.first { $0.value.address == address }?.key }
    }

    var peers: [PeerID] { state.withLock { Array($0.peers.keys) } }

    /// Whether the link at `address` has completed its handshake.
    func isEstablished(at address: Address) -> Bool {
        state.withLock { $0.peers.values.contains { $0.address == address && $0.reported } }
    }

    /// Runs `body` on the peer's link and carries out the actions it returns, under the lock so that events keep
    /// the link's order. False, without running `body`, for a peer that is gone or closing: its input is refused.
    @discardableResult
    func update(_ peer: PeerID, _ body: (inout Link) -> [LinkAction]) -> Bool {
        defer { wakeup.signal() }
        return state.withLock { state in
            guard var entry = state.peers[peer], !entry.closing else { return false }
            let actions = body(&entry.link)
            for action in actions {
                switch action {
                case .transmit(let fragment): entry.outbox.yield(.fragment(fragment))
                case .established:
                    guard let session = entry.link.session else { break }
                    entry.reported = true
                    entry.lastHeard = .now
                    continuation.yield(.connected(peer, PeerSession(session)))
                case .deliver(let message):
                    entry.lastHeard = .now
                    continuation.yield(.received(peer, message))
                case .close(let reason):
                    logger.info("closing the link", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
                    entry.closing = true
                    entry.outbox.yield(.disconnect)
                    entry.outbox.finish()
                }
            }
            state.peers[peer] = entry
            return true
        }
    }

    /// Every link's time-outs.
    func tick(at instant: ContinuousClock.Instant) {
        for peer in peers { update(peer) { $0.tick(at: instant) } }
    }

    /// The earliest instant past which a link has a time-out to act on; nil when none has (every link idle or
    /// closing), so that an idle transport needs no timer.
    var nextDeadline: ContinuousClock.Instant? {
        state.withLock { state in state.peers.values.filter { !$0.closing }.compactMap(\.link.nextDeadline).min() }
    }

    /// Asks for the peer's disconnection after the fragments already queued; false if it was already asked for
    /// (or the peer is gone).
    @discardableResult
    func hangUp(_ peer: PeerID) -> Bool {
        state.withLock { state in
            guard var entry = state.peers[peer], !entry.closing else { return false }
            entry.closing = true
            entry.outbox.yield(.disconnect)
            entry.outbox.finish()
            state.peers[peer] = entry
            return true
        }
    }

    /// The established peer heard from least recently, if that was at least `silence` ago; nil while some peer is
    /// being closed, since its slot is already being freed.
    func quietest(silentFor silence: Duration, at now: ContinuousClock.Instant) -> PeerID? {
        state.withLock { state in
            guard !state.peers.values.contains(where: \.closing) else { return nil }
            let heard = state.peers.compactMap { peer, entry in entry.lastHeard.map { (peer, $0) } }
            guard let (peer, last) = heard.min(by: { $0.1 < $1.1 }), now - last >= silence else { return nil }
            return peer
        }
    }

    /// When `quietest(silentFor:at:)` may next name a peer: when the established peer heard from least recently
    /// will have been silent for `silence`; nil while some peer is being closed (its end frees a slot) or none is
    /// established.
    func quietAt(silentFor silence: Duration) -> ContinuousClock.Instant? {
        state.withLock { state in
            guard !state.peers.values.contains(where: \.closing) else { return nil }
            return state.peers.values.compactMap(\.lastHeard).min().map { $0 + silence }
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
