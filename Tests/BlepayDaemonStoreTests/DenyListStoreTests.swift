import BlepayDaemonStore
import BlepayProtocol
import Foundation
import Testing

/// The business's copy of the ledger's deny list on a real SQLite file: kept across a restart, and never replaced
/// by an older list.
@Suite struct DenyListStoreTests {
    let f: WalletFixture

    init() throws { f = try WalletFixture() }

    func list(at t: Timestamp, vouchers: [UInt8] = []) throws -> DenyList {
        try DenyList(
            issuedAt: t, voidedVouchers: vouchers.map { try FixedBytes<Bytes8>(Array(repeating: $0, count: 8)) },
            blockedKeys: [f.deviceKey], ledgerKeyID: TrustedLedgerKeys.keyID(of: f.ledgerKey), signature: .unsigned)
    }

    @Test func theNewestListIsKeptAcrossARestartAndAnOlderOneIsNotTaken() throws {
        #expect(try DenyListStore(store: DaemonStore(path: f.path)).latest() == nil)
        let first = try list(at: f.now, vouchers: [1])
        #expect(try DenyListStore(store: DaemonStore(path: f.path)).keep(first))
        let newer = try list(at: f.now.adding(milliseconds: 1_000), vouchers: [1, 2])
        let store = DenyListStore(store: try DaemonStore(path: f.path))
        #expect(try store.latest() == first)
        #expect(try store.keep(newer))
        #expect(try !store.keep(first))
        #expect(try !store.keep(newer))
        // Reopened, as after a restart: the newest is there, to the byte.
        let reopened = try DenyListStore(store: DaemonStore(path: f.path)).latest()
        #expect(reopened == newer && reopened?.encoded == newer.encoded)
    }
}
