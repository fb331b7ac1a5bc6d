import BlepayDaemonStore
import BlepayProtocol
import Foundation
import Testing

/// The customer's acceptances awaiting their outcome, on a real SQLite file: each kept as first sent, read back by a
/// new process oldest first, and gone once its outcome is known.
@Suite struct AcceptedPaymentStoreTests {
    let f: WalletFixture

    init() throws { f = try WalletFixture() }

    func store() throws -> AcceptedPaymentStore { AcceptedPaymentStore(store: try DaemonStore(path: f.path)) }

    @Test func whatWasKeptIsReadBackByTheNextProcessUntilItIsConcluded() throws {
        let (r1, a1) = try f.pair(1_000)
        let (r2, a2) = try f.pair(250, tip: 50)
        try store().keep(r2, a2, at: f.later(minutes: 1))
        try store().keep(r1, a1, at: f.now)
        // The first acceptance sent stands: keeping the payment again (another total) changes nothing.
        let (_, other) = try f.pair(999, id: r1.paymentID)
        try store().keep(r1, other, at: f.later(minutes: 2))
        let entries = try store().entries()
        #expect(entries.map(\.request) == [r1, r2])
        #expect(entries.map(\.acceptance) == [a1, a2])
        #expect(entries.map(\.acceptedAt) == [f.now, f.later(minutes: 1)])
        try store().remove(r1.paymentID)
        try store().remove(r1.paymentID)
        #expect(try store().entries().map(\.request) == [r2])
    }
}
