/// L2CAP: LE credit-based L2CAP channels (connection-oriented channels) through the kernel's Bluetooth sockets, for
/// carrying blepay records between two peers that are already connected over BLE without crossing D-Bus.
///
/// A listener binds an adapter's address and an LE PSM (the kernel's choice by default) and hands out accepted
/// channels with their peer's address; `L2CAPChannel.connect` opens one to a peer. A channel is a SOCK_SEQPACKET
/// socket: one send is one SDU, one receive one whole SDU. Each listener and channel owns a thread that sleeps in
/// poll() on its socket and an eventfd, so that nothing blocks the cooperative pool and nothing runs while idle.
/// On a kernel without Bluetooth every operation fails with `L2CAPError.Code.unavailable`.
enum L2CAP {}

/// Where a channel ends: a Bluetooth device address ("00:AA:01:00:00:00") and its LE address type.
public struct L2CAPAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case lePublic
        case leRandom
    }

    public let address: String
    public let kind: Kind

    public init(_ address: String, kind: Kind) {
        self.address = address.uppercased()
        self.kind = kind
    }

    /// From BlueZ's `AddressType` property ("public" or "random"); nil for anything else.
    public init?(_ address: String, bluezType: String) {
        switch bluezType {
        case "public": self.init(address, kind: .lePublic)
        case "random": self.init(address, kind: .leRandom)
        default: return nil
        }
    }

    public var description: String { "\(address) (\(kind == .lePublic ? "public" : "random"))" }
}
