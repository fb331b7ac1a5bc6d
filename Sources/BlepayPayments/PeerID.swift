/// One connection to a peer, as the transport names it. A device that reconnects is a new peer: payments never
/// carry over a link, which is what lets `disconnected` be final.
public struct PeerID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// No connection: a payment restored from the daemon's state after a restart. Transports number theirs from 1.
    public static let none = PeerID(0)

    public static func < (lhs: PeerID, rhs: PeerID) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "peer-\(rawValue)" }
}
