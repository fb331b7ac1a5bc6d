import BlepayLedger
import BlepayProtocol
import Crypto

/// What a device's standing call waits on (`GET /v1/changes`): a digest of the deny list's content and of the
/// position of the last refund of a payment the device is party to, which changes whenever either does.
extension LedgerOperations {
    public func changes(_ tx: any SQLTransaction, for device: Device) throws -> LedgerChanges {
        let (vouchers, keys) = try denied(tx)
        let party = device.accountKind == .merchant ? "merchant" : "customer"
        let refund = try tx.row("SELECT COALESCE(MAX(sequence), 0) FROM refunds WHERE \(party) = ?", [.text(device.account)])
        var hash = SHA256()
        // Sorted and without repeats: the same content always gives the same token.
        for voucher in Set(vouchers.map(\.bytes)).sorted(by: { $0.lexicographicallyPrecedes($1) }) { hash.update(data: voucher) }
        hash.update(data: [0])
        for key in Set(keys.map(\.bytes)).sorted(by: { $0.lexicographicallyPrecedes($1) }) { hash.update(data: key) }
        hash.update(data: [0])
        hash.update(data: Array(String(try refund?.integer(0) ?? 0).utf8))
        return LedgerChanges(token: Array(hash.finalize().prefix(16)).hex)
    }
}
