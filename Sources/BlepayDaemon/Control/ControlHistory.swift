import BlepayControl
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import DBusKit
import Foundation

/// `ListHistory` and `GetPayment` answered from the daemon's state file; and the history as `PaymentStatus` and
/// `ListPayments` fall back to it.
extension ControlAPI {
    static func historyHandlers(_ history: PaymentHistory?) -> [String: DBusMethod.Handler] {
        [
            "ListHistory": { call in
                let query = try historyQuery(call.arguments[0].decode([String: DBusValue].self))
                let page = try read { () throws(DaemonStoreError) in try kept(history).list(query) }
                return [
                    .array(element: ControlPayment.signature, page.payments.map { ControlPayment($0).dbusValue }),
                    .string(page.next ?? ""),
                ]
            },
            "GetPayment": { call in
                let id = try paymentID(call.arguments[0].decode(String.self))
                guard let found = try read({ () throws(DaemonStoreError) in try kept(history).payment(id) }) else {
                    throw error(PaymentError(.notFound, "no payment \(id) in the history"))
                }
                let events = found.events.map { event in
                    ControlRecord.value(event.kind, "\(event.at.millisecondsSince1970)", ControlDetails(json: event.details))
                }
                return [
                    ControlPayment(found.payment, withReceipt: true).dbusValue,
                    .array(element: ControlRecord.signature, events),
                    .array(element: ControlRecord.signature, found.refunds.map(\.controlValue)),
                ]
            },
        ]
    }

    /// The filter's keys: `since` and `until` (ms since 1970), `status`, `limit` (1…500) and `cursor`.
    static func historyQuery(_ filter: [String: DBusValue]) throws(DBusError) -> HistoryQuery {
        var query = HistoryQuery()
        for (key, value) in filter {
            switch (key, value.unwrapped) {
            case ("since", .uint64(let ms)): query.since = Timestamp(millisecondsSince1970: ms)
            case ("until", .uint64(let ms)): query.until = Timestamp(millisecondsSince1970: ms)
            case ("status", .string(let status)): query.status = status
            case ("limit", .uint32(let limit)) where HistoryQuery.limits.contains(Int(limit)): query.limit = Int(limit)
            case ("cursor", .string(let cursor)): query.cursor = cursor.isEmpty ? nil : cursor
            default:
                throw invalidArgument("the filter's keys are since (t), until (t), status (s), limit (u, 1 to 500) and cursor (s), not \(key)")
            }
        }
        return query
    }

    /// The history, or a refusal naming what failed: a bad cursor is the caller's, anything else the state file's.
    static func read<T>(_ body: () throws(DaemonStoreError) -> T) throws(DBusError) -> T {
        do {
            return try body()
        } catch {
            guard error.code != .invalidQuery else { throw invalidArgument(error.message) }
            throw ControlAPI.error(PaymentError(.unexpected, error.description))
        }
    }

    private static func kept(_ history: PaymentHistory?) throws(DaemonStoreError) -> PaymentHistory {
        guard let history else { throw DaemonStoreError(.unavailable, "this daemon keeps no payment history") }
        return history
    }
}

extension ControlPayment {
    /// A payment as the history keeps it: the request's details, the receipt's (and, `withReceipt`, the receipt
    /// itself, base64), what was accepted, the counterpart, and what its refunds gave back (`refunded`).
    public init(_ payment: HistoryPayment, withReceipt: Bool = false) {
        var details = ControlDetails(payment.request)
        if let receipt = payment.receipt {
            details.add(receipt)
            if withReceipt { details.receipt = Data(receipt.encoded).base64EncodedString() }
        }
        details.total = payment.totalMinorUnits
        details.counterpart = payment.counterpart
        details.refunded = payment.refundedMinorUnits == 0 ? nil : payment.refundedMinorUnits
        self.init(paymentID: payment.request.paymentID.description, status: payment.status, details: details)
    }
}

extension HistoryRefund {
    /// `(s refund_id, s "refunded", a{sv} details)`.
    var controlValue: DBusValue { ControlRecord.value(refundID, ControlEvent.Kind.refunded.rawValue, controlDetails) }

    /// The refund's amount, the payment's refunded total after it, why, and its receipt (base64).
    var controlDetails: ControlDetails {
        var details = ControlDetails()
        (details.amount, details.currency, details.refunded) = (amountMinorUnits, currency, refundedMinorUnits)
        (details.reason, details.receipt) = (reason, Data(receipt).base64EncodedString())
        return details
    }
}

extension ControlEvent {
    /// `refunded`: a refund of the payment, made by this business or learnt by this customer from the ledger.
    public init(refund receipt: RefundReceipt) {
        var details = HistoryRefund(receipt).controlDetails
        (details.refundID, details.merchantID) = (receipt.refundID, receipt.merchantID)
        self.init(kind: .refunded, paymentID: receipt.paymentID.description, details: details)
    }
}

extension ControlDetails {
    /// Details as the history keeps them (`HistoryRecorder`); what cannot be read is left out.
    init(json: String) {
        self = (try? JSONDecoder().decode(ControlDetails.self, from: Data(json.utf8))) ?? ControlDetails()
    }
}
