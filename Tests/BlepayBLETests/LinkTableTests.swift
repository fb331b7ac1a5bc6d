@testable import BlepayBLE
import BlepayPayments
import BlepayProtocol
import Crypto
import Dispatch
import Logging
import Synchronization
import TestSupport
import Testing

/// A transport's link table: input queued for a link (a GATT write's fragment) is handed to it later, in order, so
/// that the write is answered before the link's crypto runs.
@Suite struct LinkTableTests {
    private func table() throws -> (LinkTable<Int>, PeerID) {
        let info = try ProtocolInfo(versions: [1], capabilities: [.online], maximumMessageSize: 4000)
        let handshake = CustomerHandshake(
            staticKey: Curve25519.KeyAgreement.PrivateKey(), info: info, trusting: try Merchant().trustedLedgerKeys)
        let links = LinkTable<Int>(logger: testLogger)
        let (peer, _) = links.add(try Link(customer: handshake, mtu: 517, at: .now), at: 1)
        return (links, peer)
    }

    @Test func queuedInputReturnsAtOnceAndRunsLaterInOrder() async throws {
        let (links, peer) = try table()
        let gate = DispatchSemaphore(value: 0)
        let ran = Ran()
        #expect(links.queue(peer) { _ in
            _ = gate.wait(timeout: .now() + 5)
            ran.order.withLock { $0.append(1) }
            return []
        })
        // Queued, not run: the caller (a write handler) answers while the first input is still held.
        #expect(ran.order.withLock { $0 }.isEmpty)
        #expect(links.queue(peer) { _ in ran.order.withLock { $0.append(2) }; return [] })
        #expect(links.queue(peer) { _ in ran.order.withLock { $0.append(3) }; return [] })
        gate.signal()
        try await eventually("the queued input has run") { ran.order.withLock { $0 } == [1, 2, 3] }
    }

    @Test func inputForAClosingOrRemovedPeerIsRefused() throws {
        let (links, peer) = try table()
        #expect(links.hangUp(peer))
        #expect(!links.queue(peer) { _ in [] })
        links.remove(peer)
        #expect(!links.queue(peer) { _ in [] })
    }
}

private final class Ran: Sendable {
    let order = Mutex<[Int]>([])
}
