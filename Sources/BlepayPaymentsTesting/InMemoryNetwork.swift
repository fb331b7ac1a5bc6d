import BlepayPayments
import BlepayProtocol
import Synchronization

/// A business and any number of customers joined by in-memory links that carry each message's encoding, in order,
/// with the faults a radio link has: delay, loss, duplication, and disconnection. The unit-test tier's transport.
public final class InMemoryNetwork: Sendable {
    public struct Faults: Sendable {
        /// Added to every delivery.
        public var delay: Duration
        /// Probability that a message is lost.
        public var dropRate: Double
        /// Probability that a message arrives twice.
        public var duplicateRate: Double

        public init(delay: Duration = .zero, dropRate: Double = 0, duplicateRate: Double = 0) {
            self.delay = delay
            self.dropRate = dropRate
            self.duplicateRate = duplicateRate
        }

        public static let none = Faults()
    }

    /// What travels one direction of a link: encodings, then the close, so the end sees nothing after it.
    enum Delivery: Sendable {
        case message([UInt8])
        case close
    }

    struct Link: Sendable {
        let toCustomer: AsyncStream<Delivery>.Continuation
        let toBusiness: AsyncStream<Delivery>.Continuation
        let customer: Endpoint
    }

    private let faults: Faults
    /// The business's certificate, as each customer's session shows it when it connects.
    private let certificate: PresentedCertificate
    private let state: Mutex<(links: [PeerID: Link], next: UInt64, random: any RandomNumberGenerator & Sendable)>
    /// The business's end: one transport for all its customers.
    public let business = Endpoint()

    /// - Parameter random: decides which messages the faults hit; pass a seeded generator to replay a run.
    public convenience init(
        certificate: MerchantCertificate, faults: Faults = .none,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.init(presenting: PresentedCertificate(certificate), faults: faults, random: random)
    }

    /// A business whose certificate may be renewed while it runs: each new connection shows the current one.
    public init(
        presenting certificate: PresentedCertificate, faults: Faults = .none,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.faults = faults
        self.certificate = certificate
        state = Mutex(([:], 1, random))
        business.network = self  // before anyone holds the endpoint
    }

    /// A customer comes into range and connects: returns its end of the link and the link's id (both ends use it).
    /// Both ends see the same session: a fresh session hash, the customer online. `again`: a customer seen before
    /// connects anew, over a new link at its same end.
    public func connectCustomer(capabilities: Capabilities = [.online], again: Endpoint? = nil)
        -> (transport: Endpoint, peer: PeerID)
    {
        let customer = again ?? Endpoint()
        customer.network = self  // before anyone holds the endpoint
        let (peer, hash) = state.withLock { state in
            defer { state.next += 1 }
            return (PeerID(state.next), (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &state.random) })
        }
        // 32 bytes always make a hash.
        let session = (try? Hash32(hash)).map {
            PeerSession(version: 1, sessionHash: $0, capabilities: capabilities, certificate: certificate.current)
        }
        let toCustomer = deliveries(to: customer, from: peer)
        let toBusiness = deliveries(to: business, from: peer)
        state.withLock { $0.links[peer] = Link(toCustomer: toCustomer, toBusiness: toBusiness, customer: customer) }
        if let session {
            business.continuation.yield(.connected(peer, session))
            customer.continuation.yield(.connected(peer, session))
        }
        return (customer, peer)
    }

    /// The link drops: nothing more can be sent on it, and each end sees `disconnected` after what was already
    /// on its way.
    public func cut(_ peer: PeerID) {
        guard let link = state.withLock({ $0.links.removeValue(forKey: peer) }) else { return }
        close(link)
    }

    private func close(_ link: Link) {
        for direction in [link.toCustomer, link.toBusiness] {
            direction.yield(.close)
            direction.finish()
        }
    }

    /// Cuts every link and ends every endpoint's events: drivers' run loops return.
    public func shutdown() {
        let links = state.withLock { state in
            defer { state.links = [:] }
            return state.links
        }
        for link in links.values {
            close(link)
            link.customer.continuation.finish()
        }
        business.continuation.finish()
    }

    /// Shuts the network down after `timeout` unless the returned task is cancelled first: a test that would
    /// otherwise wait forever sees its event streams end instead.
    public func watchdog(after timeout: Duration) -> Task<Void, Never> {
        Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.shutdown()
        }
    }

    func send(_ message: Message, to peer: PeerID, from endpoint: Endpoint) {
        let (link, copies) = state.withLock { state -> (Link?, Int) in
            let roll = Double.random(in: 0..<1, using: &state.random)
            let copies = roll < faults.dropRate ? 0 : roll < faults.dropRate + faults.duplicateRate ? 2 : 1
            return (state.links[peer], copies)
        }
        guard let link else { return }
        let bytes = message.encoded
        for _ in 0..<copies { (endpoint === business ? link.toCustomer : link.toBusiness).yield(.message(bytes)) }
    }

    /// One task per direction keeps the link's order while delaying each delivery.
    private func deliveries(to receiver: Endpoint, from peer: PeerID) -> AsyncStream<Delivery>.Continuation {
        let (stream, continuation) = AsyncStream<Delivery>.makeStream()
        let delay = faults.delay
        Task {
            for await delivery in stream {
                guard case .message(let bytes) = delivery else {
                    receiver.continuation.yield(.disconnected(peer))
                    return
                }
                if delay > .zero { try? await Task.sleep(for: delay) }
                guard let message = try? Message(encoded: bytes) else { continue }
                receiver.continuation.yield(.received(peer, message))
            }
        }
        return continuation
    }

    /// One end of the network, as a `PaymentTransport`.
    public final class Endpoint: PaymentTransport, @unchecked Sendable {
        // Set once, before the endpoint is handed out, and never again.
        fileprivate weak var network: InMemoryNetwork?
        public let events: AsyncStream<TransportEvent>
        fileprivate let continuation: AsyncStream<TransportEvent>.Continuation

        init() { (events, continuation) = AsyncStream.makeStream() }

        public func send(_ message: Message, to peer: PeerID) { network?.send(message, to: peer, from: self) }
        public func disconnect(_ peer: PeerID) { network?.cut(peer) }
    }
}
