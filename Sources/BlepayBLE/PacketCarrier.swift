import BlepayPayments
import BlepayProtocol
import L2CAP

/// Carries one link's fragments over packet sockets, either side: an L2CAP channel instead of GATT
/// (docs/protocol.md §9), or the business's GATT sockets from bluetoothd (`AcquireWrite`, `AcquireNotify`). Each
/// fragment is one packet, each packet received one fragment for the link.
enum PacketCarrier {
    /// The receive MTU both ends ask for: a whole record in one SDU.
    static let receiveMTU = Framing.channelMTU

    /// Sends the outbox's fragments and hands the peer's to the link until the link closes, the channel ends
    /// (the peer closed it or the BLE link dropped), or the task is cancelled; then closes the channel. Returns why it
    /// ended.
    static func carry<Address: Hashable & Sendable>(
        _ peer: PeerID, of links: LinkTable<Address>, over channel: PacketChannel,
        outbox: AsyncStream<LinkTable<Address>.Outgoing>, clock: @escaping @Sendable () -> Timestamp
    ) async -> String {
        // Closing ends a send waiting for the peer's credits, which cancellation alone would not.
        await withTaskCancellationHandler {
            await withTaskGroup(of: String.self) { group in
                group.addTask {
                    for await outgoing in outbox {
                        guard case .fragment(let sdu) = outgoing else { return "the link was closed" }
                        do {
                            try await channel.send(sdu)
                        } catch {
                            return "a send failed: \(error)"
                        }
                    }
                    return "the link was closed"
                }
                group.addTask {
                    for await sdu in channel.incoming {
                        links.update(peer) { $0.receive(sdu, at: .now, now: clock()) }
                    }
                    return "the channel closed"
                }
                let first = await group.next() ?? "the transport stopped"
                channel.close()
                group.cancelAll()
                return first
            }
        } onCancel: {
            channel.close()
        }
    }
}
