import BlepayProtocol
import Foundation
import GRDB

/// Where a business keeps the newest deny list the ledger signed, so that after a restart without the ledger it
/// still knows which vouchers were voided and which devices blocked, and how old that knowledge is.
public struct DenyListStore: Sendable {
    private let store: DaemonStore

    public init(store: DaemonStore) { self.store = store }

    /// Keeps `list` unless a list issued at the same time or later is kept already; returns whether it did.
    @discardableResult
    public func keep(_ list: DenyList) throws(DaemonStoreError) -> Bool {
        try store.write(failing: { DaemonStoreError(.unavailable, $0) }) { db in
            let kept = try Int64.fetchOne(db, sql: "SELECT issued_at FROM deny_list WHERE id = 1")
            guard kept.map({ $0 < Int64(list.issuedAt.millisecondsSince1970) }) ?? true else { return false }
            try db.execute(
                sql: "INSERT OR REPLACE INTO deny_list (id, encoded, issued_at) VALUES (1, ?, ?)",
                arguments: [Data(list.encoded), Int64(list.issuedAt.millisecondsSince1970)])
            return true
        }
    }

    /// The list kept, if any.
    public func latest() throws(DaemonStoreError) -> DenyList? {
        let bytes = try store.read(failing: { DaemonStoreError(.unavailable, $0) }) { db in
            try Data.fetchOne(db, sql: "SELECT encoded FROM deny_list WHERE id = 1")
        }
        guard let bytes else { return nil }
        do {
            return try DenyList(encoded: Array(bytes))
        } catch {
            throw DaemonStoreError(.unavailable, "the kept deny list cannot be read: \(error)")
        }
    }
}
