import BlepayPayments
import BlepayProtocol
import Synchronization
import TestSupport

/// The other end of a transport under test, speaking the protocol with a real `Link`: fragments leave one at a
/// time in order through `transmit`, and a closed link hangs up after the fragments before the close.
final class TestPeer: Sendable {
    enum Event: Sendable, Hashable {
        case established(PeerSession)
        case received(Message)
        case closed(ProtocolError.Code)
    }

    private enum Outgoing {
        case fragment([UInt8])
        case hangUp
    }

    let events: Recorder<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let link = Mutex<Link?>(nil)
    private let outbox: AsyncStream<Outgoing>.Continuation
    private let sender: Task<Void, Never>

    init(transmit: @escaping @Sendable ([UInt8]) async throws -> Void, hangUp: @escaping @Sendable () async throws -> Void) {
        let (stream, sink) = AsyncStream<Event>.makeStream()
        self.sink = sink
        events = Recorder(stream)
        let (queue, outbox) = AsyncStream<Outgoing>.makeStream()
        self.outbox = outbox
        sender = Task {
            for await item in queue {
                switch item {
                case .fragment(let fragment): try? await transmit(fragment)
                case .hangUp: try? await hangUp()
                }
            }
        }
    }

    deinit {
        outbox.finish()
        sender.cancel()
    }

    /// The link of a new connection, or none before it.
    func open(_ new: Link?) { link.withLock { $0 = new } }

    var session: PeerSession? { link.withLock { $0?.session.map(PeerSession.init) } }

    func start() { update { $0.start() } }
    func receive(_ fragment: [UInt8]) { update { $0.receive(fragment, at: .now, now: wallClock()) } }
    func send(_ message: Message) { update { $0.send(message) } }

    private func update(_ body: (inout Link) -> [LinkAction]) {
        link.withLock { link in
            guard var current = link else { return }
            let actions = body(&current)
            link = current
            for action in actions {
                switch action {
                case .transmit(let fragment): outbox.yield(.fragment(fragment))
                case .established: if let session = current.session { sink.yield(.established(PeerSession(session))) }
                case .deliver(let message): sink.yield(.received(message))
                case .close(let error):
                    sink.yield(.closed(error.code))
                    outbox.yield(.hangUp)
                }
            }
        }
    }
}
