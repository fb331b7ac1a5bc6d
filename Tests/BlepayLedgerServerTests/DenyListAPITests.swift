import BlepayLedger
import BlepayLedgerClient
import BlepayLedgerServer
import BlepayLedgerStore
import BlepayProtocol
import LedgerTestSupport
import Testing

/// `GET /v1/deny-list`: signed by the ledger, for enrolled devices, naming voided vouchers until their release.
@Suite struct DenyListAPITests {
    @Test(arguments: StorageKind.allCases)
    func theDenyListNamesVoidedVouchersUntilTheirRelease(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voided = try await TestVoucher(ledger, alice, limit: 3_000)
            _ = try await TestVoucher(ledger, alice, limit: 1_000)
            let trusted = TrustedLedgerKeys([ledger.server.ledgerKey.publicKey])

            let empty = try await cafe.client.denyList()
            try empty.verify(trusting: trusted, at: LedgerServer.systemClock(), maximumAge: 60_000)
            #expect(empty.voidedVouchers.isEmpty && empty.blockedKeys.isEmpty)

            _ = try await alice.client.voidPreAuthorization(voided.voucher.voucherID.description)
            // Any enrolled device may read it: the customer's too.
            for client in [cafe.client, alice.client] {
                let list = try await client.denyList()
                try list.verify(trusting: trusted, at: LedgerServer.systemClock(), maximumAge: 60_000)
                #expect(list.voidedVouchers == [voided.voucher.voucherID] && list.blockedKeys.isEmpty)
                #expect(list.denies(voucher: voided.voucher.voucherID))
            }

            // Released, nothing settles from it any more: it leaves the list.
            let operations = LedgerOperations(ledgerKey: ledger.server.ledgerKey)
            let release = voided.voucher.expiresAt.adding(milliseconds: UInt64(LedgerConfiguration().preAuthorizationGraceSeconds) * 1000)
            _ = try await ledger.storage.storage.write { tx in try operations.expire(tx, at: release) }
            #expect(try await cafe.client.denyList().voidedVouchers.isEmpty)

            // Devices only.
            #expect(try await ledger.raw("GET", "/v1/deny-list").status == 401)
            do {
                _ = try await ledger.admin.denyList()
                Issue.record("the operator read a device route")
            } catch let error as LedgerClientError {
                guard case .refused(let status, _) = error else { throw error }
                #expect(status == 401 || status == 403)
            }
        }
    }
}
