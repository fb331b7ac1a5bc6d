/// The blepay GATT protocol (`docs/protocol.md`): the messages business and customer exchange, their compact
/// binary codec, framing to the ATT MTU, merchant certificates, signed acceptances and the Noise-encrypted session.
/// Pure Swift: no BlueZ, no D-Bus, no clock of its own.
public enum BlepayProtocol {
    /// The protocol versions this implementation speaks, highest first.
    public static let versions: [UInt8] = [1]
}
