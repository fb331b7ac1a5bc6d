import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Offline payments settled before uses were scoped by merchant and claimed ranges: after the migration they keep
/// their transfer's name, answer `already_settled` with the same receipt, and their range (read from the acceptance)
/// still counts; on both databases.
@Suite struct OfflineMigrationTests {
    @Test(arguments: StorageKind.allCases)
    func aUseSettledBeforeTheMigrationKeepsItsTransferAndItsRangeCounts(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let paid = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            #expect(try await cafe.client.settle([paid], operation: "batch-1").results.map(\.result) == [.settled])

            // Back to schema 3, as a ledger of then settled it: the transfer named by payment id, the use without range.
            let payment = paid.0.paymentID.description
            let legacy = "offline:\(payment)"
            try await ledger.storage.storage.write { tx in
                try CredentialMigrationTests.undoCredentials(tx, ledgerKey: ledger.server.ledgerKey)
                let (integer, blob) = tx.dialect == .postgres ? ("BIGINT", "BYTEA") : ("INTEGER", "BLOB")
                try tx.run("UPDATE transfers SET id = ? WHERE id = ?",
                    [.text(legacy), .text(PreAuthorization.transferID(of: voucher.voucher.voucherID, sequence: 1))])
                try tx.run("DROP TABLE double_spends", [])
                try tx.run("ALTER TABLE pre_authorization_uses RENAME TO uses_now", [])
                try tx.run("DROP INDEX pre_authorization_uses_payment", [])
                try tx.run(
                    """
                    CREATE TABLE pre_authorization_uses (
                        pre_authorization TEXT NOT NULL REFERENCES pre_authorizations(id), payment TEXT NOT NULL UNIQUE,
                        sequence \(integer) NOT NULL, total \(integer) NOT NULL, merchant TEXT NOT NULL,
                        request \(blob) NOT NULL, acceptance \(blob) NOT NULL, settled_at \(integer) NOT NULL,
                        PRIMARY KEY (pre_authorization, sequence))
                    """, [])
                try tx.run(
                    """
                    INSERT INTO pre_authorization_uses (pre_authorization, payment, sequence, total, merchant, request, acceptance, settled_at)
                    SELECT pre_authorization, payment, sequence, total, merchant, request, acceptance, settled_at FROM uses_now
                    """, [])
                try tx.run("DROP TABLE uses_now", [])
                try tx.run("DELETE FROM schema_version WHERE version > 3", [])
            }
            try await ledger.storage.storage.migrate()
            #expect(try await ledger.server.audit() == [])

            let again = try await cafe.client.settle([paid], operation: "batch-2").results
            #expect(again.map(\.result) == [.alreadySettled])
            let encoded = try #require(again[0].receipt)
            let receipt = try Receipt(encoded: [UInt8](try #require(Data(base64Encoded: encoded))))
            #expect(receipt.transactionID == legacy)
            #expect(try await cafe.client.payment(paid.0.paymentID).receipt == again[0].receipt)
            // Its range, [0, 1,000), still counts against an overlapping use; a disjoint one settles.
            let overlapping = try voucher.pay(try ledger.request(by: cafe, amount: 500, online: false), sequence: 2, spentBefore: 600)
            let disjoint = try voucher.pay(try ledger.request(by: cafe, amount: 500, online: false), sequence: 3, spentBefore: 1_000)
            #expect(try await cafe.client.settle([overlapping, disjoint], operation: "batch-3").results.map(\.result)
                == [.rangeOverlap, .settled])
            #expect(try await ledger.admin.doubleSpends().map(\.settledAcceptance) == [Data(paid.1.encoded).base64EncodedString()])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_500)
            #expect(try await ledger.server.audit() == [])
        }
    }
}
