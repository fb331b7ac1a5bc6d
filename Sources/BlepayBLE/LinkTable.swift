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
        /// Input queued by `queue`, for the task that hands it to the link; nil until the first.
        var inbox: AsyncStream<Input>.Continuation?
    }

    /// Input for a link, given it later by `queue`.
    typealias Input = @Sendable (inout Link) -> [LinkAction]

    private struct State {
        var peers: [PeerID: Peer] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let logger: Logger
    let events: AsyncStream<TransportEvent>
    /// Rung when a link's deadline comes earlier than the one the transport's `keepTime` may be sleeping until (a
    /// link added, or an input that moved its deadline forward), not on every fragment.
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
        var earlier = false
        defer { if earlier { wakeup.signal() } }
        return state.withLock { state in
            guard var entry = state.peers[peer], !entry.closing else { return false }
            let before = entry.link.nextDeadline
            let actions = body(&entry.link)
            if let after = entry.link.nextDeadline { earlier = before.map { after < $0 } ?? true }
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

    /// Like `update`, but `body` runs later, in order with the peer's other queued input, on a task of the table's:
    /// for input whose sender waits on our answer. A GATT write is then answered once its fragment is queued,
    /// not after the handshake's crypto that it may start. False for a peer that is gone or closing.
    func queue(_ peer: PeerID, _ body: @escaping Input) -> Bool {
        state.withLock { state in
            guard var entry = state.peers[peer], !entry.closing else { return false }
            if entry.inbox == nil {
                let (input, inbox) = AsyncStream<Input>.makeStream()
                entry.inbox = inbox
                state.peers[peer] = entry
                Task { [self] in
                    for await body in input { update(peer, body) }
                }
            }
            entry.inbox?.yield(body)
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
        guard let (peer, last) = leastRecentlyHeard(), now - last >= silence else { return nil }
        return peer
    }

    /// When `quietest(silentFor:at:)` may next name a peer; nil while it cannot name one at any time.
    func quietAt(silentFor silence: Duration) -> ContinuousClock.Instant? {
        leastRecentlyHeard().map { $0.heard + silence }
    }

    /// The established peer heard from least recently and when; nil while some peer is being closed (its end frees
    /// a slot) or none is established.
    private func leastRecentlyHeard() -> (peer: PeerID, heard: ContinuousClock.Instant)? {
        state.withLock { state in
            guard !state.peers.values.contains(where: \.closing) else { return nil }
            return state.peers.compactMap { peer, entry in entry.lastHeard.map { (peer, $0) } }.min { $0.1 < $1.1 }
        }
    }

    /// The link went down: the peer is forgotten, and `disconnected` reported if `connected` was.
    func remove(_ peer: PeerID) {
        state.withLock { state in
            guard let entry = state.peers.removeValue(forKey: peer) else { return }
            entry.outbox.finish()
            entry.inbox?.finish()
            if entry.reported { continuation.yield(.disconnected(peer)) }
        }
    }

    /// Ends the event stream (the transport stopped); every link is forgotten first.
    func finish() {
        for peer in peers { remove(peer) }
        continuation.finish()
    }
}
