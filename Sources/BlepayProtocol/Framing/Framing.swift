/// How records travel (`docs/protocol.md`, Framing): over GATT each ATT write or notification carries one fragment,
/// a 2-byte header and up to MTU − 5 bytes of the record, and never more than 510 bytes in all; over an L2CAP channel
/// (§9) each SDU carries one fragment of up to the channel's send MTU, so that a record is one SDU when both ends
/// take `channelMTU`.
public enum Framing {
    /// The largest record: 4096 bytes, far above any message of version 1 (a request is about 200 bytes).
    public static let maximumRecordSize = 4096
    public static let headerSize = 2
    /// The largest fragment, header included, whatever the MTU: BlueZ 5.66 refuses a longer write value with ATT error
    /// 0x0D (Invalid Attribute Value Length), though ATT allows 512 and an MTU of 517 leaves room for 514.
    public static let maximumFragmentSize = 510
    /// ATT's minimum MTU; a write or notification carries MTU − 3 bytes.
    public static let minimumMTU = 23
    /// The receive MTU each end of an L2CAP channel asks for: the largest record and its header, one SDU.
    public static let channelMTU = maximumRecordSize + headerSize
    /// The smallest MTU of an LE credit-based channel (Core 5.3 Vol 3 Part A §4.22).
    public static let minimumChannelMTU = 23
    /// A record's fragments must all arrive within this time of its first.
    public static let reassemblyTimeout: Duration = .seconds(5)

    static let lastFlag: UInt8 = 0x80
    static let counterMask: UInt8 = 0x7F

    /// Bytes of record per fragment at this MTU.
    public static func payloadSize(mtu: Int) throws(ProtocolError) -> Int {
        guard mtu >= minimumMTU else { throw ProtocolError(.invalidMTU, "MTU \(mtu) is below ATT's minimum 23") }
        return min(mtu - 3, maximumFragmentSize) - headerSize
    }

    /// Bytes of record per SDU of an L2CAP channel whose peer takes SDUs of up to `channelMTU` bytes.
    public static func payloadSize(channelMTU: Int) throws(ProtocolError) -> Int {
        guard channelMTU >= minimumChannelMTU else {
            throw ProtocolError(.invalidMTU, "channel MTU \(channelMTU) is below LE's minimum 23")
        }
        return min(channelMTU, Self.channelMTU) - headerSize
    }
}

/// Splits outgoing records into fragments; one per direction of a connection, since it numbers records.
public struct Fragmenter: Sendable {
    public private(set) var mtu: Int
    /// Whether fragments are SDUs of an L2CAP channel and `mtu` its send MTU, rather than ATT values.
    public let overChannel: Bool
    private var counter: UInt8 = 0

    /// Fragments for ATT at this ATT MTU.
    public init(mtu: Int) throws(ProtocolError) {
        _ = try Framing.payloadSize(mtu: mtu)
        self.mtu = mtu
        overChannel = false
    }

    /// Fragments for an L2CAP channel whose peer takes SDUs of up to `channelMTU` bytes.
    public init(channelMTU: Int) throws(ProtocolError) {
        _ = try Framing.payloadSize(channelMTU: channelMTU)
        mtu = channelMTU
        overChannel = true
    }

    /// The MTU may be raised (or lowered) between records.
    public mutating func setMTU(_ mtu: Int) throws(ProtocolError) {
        _ = try payloadSize(mtu)
        self.mtu = mtu
    }

    private func payloadSize(_ mtu: Int) throws(ProtocolError) -> Int {
        overChannel ? try Framing.payloadSize(channelMTU: mtu) : try Framing.payloadSize(mtu: mtu)
    }

    public mutating func fragments(of record: [UInt8]) throws(ProtocolError) -> [[UInt8]] {
        guard !record.isEmpty, record.count <= Framing.maximumRecordSize else {
            throw ProtocolError(.messageTooLarge, "a record is 1 to \(Framing.maximumRecordSize) bytes, not \(record.count)")
        }
        let size = try payloadSize(mtu)
        guard (record.count + size - 1) / size <= 256 else {
            throw ProtocolError(.messageTooLarge, "\(record.count) bytes need more than 256 fragments at MTU \(mtu)")
        }
        let counter = self.counter
        self.counter = (counter + 1) & Framing.counterMask
        return stride(from: 0, to: record.count, by: size).enumerated().map { index, start in
            let end = min(start + size, record.count)
            let last = end == record.count ? Framing.lastFlag : 0
            return [last | counter, UInt8(index)] + record[start..<end]
        }
    }
}

/// Reassembles incoming fragments into records. Inside a live link ATT neither loses nor reorders, so any gap is a
/// broken peer or link: the partial record is dropped with an error and the caller ends the session. A fragment
/// repeated right after itself is ignored (a retried write).
public struct Reassembler: Sendable {
    private var buffer: [UInt8] = []
    private var expected: (counter: UInt8, index: Int)?
    private var last: (counter: UInt8, index: UInt8)?
    private var startedAt: ContinuousClock.Instant?
    private var nextCounter: UInt8 = 0

    public init() {}

    /// Bytes held for a record in progress.
    public var pendingBytes: Int { buffer.count }

    /// Takes one fragment received at `now`; returns the record it completes, if any.
    public mutating func receive(_ fragment: [UInt8], at now: ContinuousClock.Instant) throws(ProtocolError)
        -> [UInt8]?
    {
        guard fragment.count > Framing.headerSize else {
            throw ProtocolError(.truncated, "a fragment has a 2-byte header and at least 1 byte")
        }
        let counter = fragment[0] & Framing.counterMask
        let index = fragment[1]
        let isLast = fragment[0] & Framing.lastFlag != 0
        if let last, last == (counter, index) { return nil }
        if let startedAt, now - startedAt > Framing.reassemblyTimeout {
            reset()
            throw ProtocolError(.reassemblyTimeout, "record \(counter) incomplete after 5 s")
        }
        let wanted = expected ?? (nextCounter, 0)
        guard counter == wanted.counter, Int(index) == wanted.index else {
            reset()
            throw ProtocolError(
                .fragmentOutOfOrder, "got fragment \(index) of record \(counter), expected \(wanted.index) of \(wanted.counter)")
        }
        guard buffer.count + fragment.count - Framing.headerSize <= Framing.maximumRecordSize else {
            reset()
            throw ProtocolError(.messageTooLarge, "record \(counter) exceeds \(Framing.maximumRecordSize) bytes")
        }
        if index == 0 { startedAt = now }
        buffer += fragment[Framing.headerSize...]
        last = (counter, index)
        guard isLast else {
            guard index < 255 else {
                reset()
                throw ProtocolError(.messageTooLarge, "record \(counter) has more than 256 fragments")
            }
            expected = (counter, Int(index) + 1)
            return nil
        }
        let record = buffer
        buffer = []
        expected = nil
        startedAt = nil
        nextCounter = (counter + 1) & Framing.counterMask
        return record
    }

    /// Whether a record in progress has outlived the reassembly timeout.
    public func hasTimedOut(at now: ContinuousClock.Instant) -> Bool {
        startedAt.map { now - $0 > Framing.reassemblyTimeout } ?? false
    }

    /// The instant past which the record in progress has timed out; nil with none in progress.
    public var deadline: ContinuousClock.Instant? { startedAt.map { $0 + Framing.reassemblyTimeout } }

    private mutating func reset() {
        buffer = []
        expected = nil
        startedAt = nil
        last = nil
    }
}
