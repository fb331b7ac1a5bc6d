import BlepayControl
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import DBusKit

/// The handlers both daemons share: payments and their history, and offline settlement.
extension ControlAPI {
    /// `PaymentStatus` and `ListPayments`, which both daemons answer from their machines' records, then from the
    /// history (`ListPayments`: its newest page), so that a restart does not empty them; and `ListHistory` and
    /// `GetPayment`.
    static func paymentHandlers(
        status: @escaping @Sendable (PaymentID) async -> PaymentSnapshot?,
        list: @escaping @Sendable () async -> [PaymentSnapshot], history: PaymentHistory?, unknown: String
    ) -> [String: DBusMethod.Handler] {
        let handlers: [String: DBusMethod.Handler] = [
            "PaymentStatus": { call in
                let id = try paymentID(call.arguments[0].decode(String.self))
                if let snapshot = await status(id) { return [ControlPayment(snapshot).dbusValue] }
                guard let kept = try read({ () throws(DaemonStoreError) in try history?.payment(id) }) else {
                    throw error(PaymentError(.notFound, "\(unknown) \(id)"))
                }
                return [ControlPayment(kept.payment).dbusValue]
            },
            "ListPayments": { _ in
                let current = await list().map { ControlPayment($0) }
                let kept = try read { () throws(DaemonStoreError) in try history?.list(HistoryQuery(limit: HistoryQuery.limits.upperBound)).payments ?? [] }
                let known = Set(current.map(\.paymentID))
                let earlier = kept.map { ControlPayment($0) }.filter { !known.contains($0.paymentID) }
                return [.array(element: ControlPayment.signature, (current + earlier).map(\.dbusValue))]
            },
        ]
        return handlers.merging(historyHandlers(history)) { $1 }
    }

    /// `SettlementStatus`, `ListSettlements` and `SettleNow`, from the daemon's settlement (none: each refuses).
    static func settlementHandlers(_ settlement: OfflineSettlement?) -> [String: DBusMethod.Handler] {
        [
            "SettlementStatus": { _ in
                do throws(PaymentError) {
                    let (waiting, reachable) = try kept(settlement).status()
                    let totals = waiting.totals.sorted { $0.key < $1.key }.map {
                        DBusDictEntry(key: .string($0.key), value: .uint64($0.value))
                    }
                    return [
                        .uint32(UInt32(waiting.count)), .dictionary(key: "s", value: "t", totals),
                        .uint64(waiting.oldest?.millisecondsSince1970 ?? 0), .boolean(reachable),
                    ]
                } catch { throw ControlAPI.error(error) }
            },
            "ListSettlements": { _ in
                do throws(PaymentError) {
                    let entries = try kept(settlement).entries()
                    return [.array(element: ControlSettlement.signature, entries.map { ControlSettlement($0).dbusValue })]
                } catch { throw ControlAPI.error(error) }
            },
            "SettleNow": { _ in
                do throws(PaymentError) { try kept(settlement).settleNow() } catch { throw ControlAPI.error(error) }
                return []
            },
        ]
    }

    private static func kept(_ settlement: OfflineSettlement?) throws(PaymentError) -> OfflineSettlement {
        guard let settlement else { throw PaymentError(.notFound, "this daemon takes no offline payments") }
        return settlement
    }
}
