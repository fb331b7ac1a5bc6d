import Noise

/// One BLE connection's protocol, either side: framing to the ATT MTU or an L2CAP channel's (§3, §9), the handshake
/// (§7) and the encrypted session that carries messages (§6). A value type without I/O: each input returns the
/// actions to carry out, in order, and the BLE transport carries them out (fragments as ATT writes or
/// notifications, or as the channel's SDUs).
///
/// Any failure ends the link: the peer is told with an Error (plaintext before the handshake completes, encrypted
/// after; §7.6) and the last action is `close`. After that, the link ignores everything.
public struct Link: Sendable {
    enum State: Sendable {
        case customer(CustomerHandshake)
        /// `started` once handshake 1 has gone out.
        case business(BusinessHandshake, started: Bool)
        case established(SecureSession)
        case closed
    }

    /// How long a handshake may take, from the link's creation.
    public static let handshakeTimeout: Duration = .seconds(10)

    private var state: State
    private var fragmenter: Fragmenter
    private var reassembler = Reassembler()
    private let openedAt: ContinuousClock.Instant

    /// The customer's side of a connection a business opened (GATT server, BLE peripheral), over GATT at this ATT
    /// MTU.
    public init(customer handshake: CustomerHandshake, mtu: Int, at now: ContinuousClock.Instant)
        throws(ProtocolError)
    {
        self.init(.customer(handshake), try Fragmenter(mtu: mtu), at: now)
    }

    /// The customer's side over an L2CAP channel the business opened, whose send MTU is `channelMTU` (§9).
    public init(customer handshake: CustomerHandshake, channelMTU: Int, at now: ContinuousClock.Instant)
        throws(ProtocolError)
    {
        self.init(.customer(handshake), try Fragmenter(channelMTU: channelMTU), at: now)
    }

    /// The business's side of a connection it opened (GATT client, BLE central), over GATT at this ATT MTU; `start`
    /// sends handshake 1.
    public init(business handshake: BusinessHandshake, mtu: Int, at now: ContinuousClock.Instant)
        throws(ProtocolError)
    {
        self.init(.business(handshake, started: false), try Fragmenter(mtu: mtu), at: now)
    }

    /// The business's side over an L2CAP channel it opened, whose send MTU is `channelMTU` (§9).
    public init(business handshake: BusinessHandshake, channelMTU: Int, at now: ContinuousClock.Instant)
        throws(ProtocolError)
    {
        self.init(.business(handshake, started: false), try Fragmenter(channelMTU: channelMTU), at: now)
    }

    private init(_ state: State, _ fragmenter: Fragmenter, at now: ContinuousClock.Instant) {
        self.state = state
        self.fragmenter = fragmenter
        openedAt = now
    }

    /// The session, once the handshake is complete: what acceptances are bound to and checked against.
    public var session: SecureSession? {
        if case .established(let session) = state { session } else { nil }
    }

    public var isClosed: Bool {
        if case .closed = state { true } else { false }
    }

    /// The ATT MTU the next records are fragmented for (a GATT server learns it with each request).
    public mutating func setMTU(_ mtu: Int) -> [LinkAction] {
        guard !isClosed else { return [] }
        do {
            try fragmenter.setMTU(mtu)
            return []
        } catch {
            return fail(error)
        }
    }

    /// The business's first move: handshake 1. Nothing on the customer's side or once started.
    public mutating func start() -> [LinkAction] {
        guard case .business(var handshake, started: false) = state else { return [] }
        do {
            let first = try handshake.start()
            state = .business(handshake, started: true)
            return try transmit(first)
        } catch {
            return fail(error)
        }
    }

    /// One fragment from the peer (an ATT write the customer served, a notification the business got, or an SDU).
    /// `now` is the wall clock that the merchant certificate's validity is checked against.
    public mutating func receive(_ fragment: [UInt8], at instant: ContinuousClock.Instant, now: Timestamp)
        -> [LinkAction]
    {
        guard !isClosed else { return [] }
        do {
            guard let bytes = try reassembler.receive(fragment, at: instant) else { return [] }
            let record = try Record(encoded: bytes)
            if record.kind == .plaintextError, session == nil { return try peerFailed(record) }
            return try handle(record, now: now)
        } catch {
            return fail(error)
        }
    }

    /// Sends a message over the established session; before it (or after close) the message is dropped, since
    /// payment messages are only ever sent to peers reported connected.
    public mutating func send(_ message: Message) -> [LinkAction] {
        guard case .established(var session) = state else { return [] }
        do {
            let record = try session.seal(message)
            state = .established(session)
            return try transmit(record)
        } catch {
            return fail(error)
        }
    }

    /// The instant past which `tick` has a time-out to act on: the handshake's end, or a record in progress; nil
    /// when nothing is timed (established with no record in progress, or closed), so that an idle link needs no timer.
    public var nextDeadline: ContinuousClock.Instant? {
        switch state {
        case .closed: nil
        case .customer, .business: [openedAt + Self.handshakeTimeout, reassembler.deadline].compactMap { $0 }.min()
        case .established: reassembler.deadline
        }
    }

    /// Ends the link for a time-out: a record left incomplete too long, or a handshake not done in time.
    public mutating func tick(at instant: ContinuousClock.Instant) -> [LinkAction] {
        switch state {
        case .closed:
            return []
        case .customer, .business:
            guard instant - openedAt > Self.handshakeTimeout else { break }
            return fail(ProtocolError(.handshakeTimeout, "the handshake did not complete within 10 s"))
        case .established:
            break
        }
        guard reassembler.hasTimedOut(at: instant) else { return [] }
        return fail(ProtocolError(.reassemblyTimeout, "a record stayed incomplete for more than 5 s"))
    }

    private mutating func handle(_ record: Record, now: Timestamp) throws(ProtocolError) -> [LinkAction] {
        switch state {
        case .customer(var handshake):
            switch try handshake.receive(record, at: now) {
            case .reply(let reply):
                state = .customer(handshake)
                return try transmit(reply)
            case .established(let session):
                state = .established(session)
                return [.established]
            }
        case .business(var handshake, let started):
            guard started else { throw ProtocolError(.unexpectedMessage, "a \(record.kind) record before handshake 1") }
            let (reply, session) = try handshake.receive(record)
            let actions = try transmit(reply)
            state = .established(session)
            return actions + [.established]
        case .established(var session):
            let message = try session.open(record)
            state = .established(session)
            guard Self.mayReceive(message, as: session.role) else {
                let sender = session.role == .responder ? "business" : "customer"
                throw ProtocolError(.unexpectedMessage, "a message the \(sender) may not send (§6)")
            }
            if session.role == .responder, case .paymentRequest(let request) = message {
                try session.verify(request)
            }
            return [.deliver(message)]
        case .closed:
            return []
        }
    }

    /// What each side may be sent (§6's direction table): the customer (responder) every message but an
    /// acceptance or a result query; the business (initiator) an acceptance, a cancel, an error, a customer's query
    /// for a result it lost, and the result of a payment an online customer executed for it. A message the other way round is a protocol violation, answered before the close.
    /// No `default`, so that a new message needs a decision here.
    static func mayReceive(_ message: Message, as role: HandshakeState.Role) -> Bool {
        switch message {
        case .paymentRequest, .otherPaid, .goAhead: role == .responder
        case .paymentAcceptance, .resultQuery: role == .initiator
        case .cancelPayment, .paymentResult, .error: true
        }
    }

    /// A plaintext Error before the handshake completed: the peer gave up. An error is never answered with an
    /// error (§7.6): a readable one closes the link silently with the failure it names; an unreadable one is thrown
    /// by `failure(from:)` as the malformed record it is, and answered with 400.
    private mutating func peerFailed(_ record: Record) throws(ProtocolError) -> [LinkAction] {
        let failure = try Handshake.failure(from: record)
        state = .closed
        return [.close(failure)]
    }

    private mutating func transmit(_ record: Record) throws(ProtocolError) -> [LinkAction] {
        try fragmenter.fragments(of: record.encoded).map(LinkAction.transmit)
    }

    /// Tells the peer why if it still can, then closes.
    private mutating func fail(_ error: ProtocolError) -> [LinkAction] {
        let notice: Record?
        switch state {
        case .customer(let handshake): notice = handshake.failureRecord(for: error)
        case .business: notice = Record.plaintextError(for: error)
        case .established(var session):
            let message = try? ErrorMessage(code: error.paymentErrorCode, paymentID: nil, detail: nil)
            notice = message.flatMap { try? session.seal(.error($0)) }
        case .closed: return []
        }
        let told = notice.flatMap { try? fragmenter.fragments(of: $0.encoded) } ?? []
        state = .closed
        return told.map(LinkAction.transmit) + [.close(error)]
    }
}

/// What a link asks its transport to do, in order.
public enum LinkAction: Sendable, Hashable {
    /// Send one fragment, after the previous one has been acknowledged: an ATT write request from the business, a
    /// notification from the customer.
    case transmit([UInt8])
    /// The handshake is complete: the link carries payment messages from now on.
    case established
    /// A message from the peer, decrypted, decoded, and (a request, on the customer's side) checked against the
    /// merchant certificate.
    case deliver(Message)
    /// Disconnect, after the fragments before this; the error says why.
    case close(ProtocolError)
}
