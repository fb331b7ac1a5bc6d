import BlepayPayments
import BlepayProtocol
import DBusKit

/// Payment events as `PaymentEvent` signal arguments. The customer's kinds are the reference SDK's
/// (`receivedPayment`, `finishedPayment`, `cancelled`, `error`, `otherPaid`, `disconnected`).
extension ControlAPI {
    static func signal(_ event: CustomerEvent) -> [DBusValue] {
        var details: [String: DBusValue] = ["peer": .uint64(event.peer.rawValue)]
        let (kind, id): (String, PaymentID?)
        switch event {
        case .receivedPayment(_, let request):
            (kind, id) = ("receivedPayment", request.paymentID)
            details.merge(Self.details(request)) { $1 }
        case .finishedPayment(_, let receipt):
            (kind, id) = ("finishedPayment", receipt.paymentID)
            details.merge(Self.details(receipt)) { $1 }
        case .cancelled(_, let payment, let side):
            (kind, id) = ("cancelled", payment)
            details["by"] = .string(side == .customer ? "customer" : "business")
        case .error(_, let payment, let error):
            (kind, id) = ("error", payment)
            details.merge(Self.details(error)) { $1 }
        case .otherPaid(_, let payment):
            (kind, id) = ("otherPaid", payment)
        case .disconnected:
            (kind, id) = ("disconnected", nil)
        }
        return [.string(kind), .string(id?.description ?? ""), .stringDictionary(details)]
    }

    static func signal(_ event: BusinessEvent) -> [DBusValue] {
        var details: [String: DBusValue] = [:]
        let (kind, id): (String, PaymentID)
        switch event {
        case .offered(let payment, let peer):
            (kind, id) = ("offered", payment)
            details["peer"] = .uint64(peer.rawValue)
        case .declined(let payment, let peer):
            (kind, id) = ("declined", payment)
            details["peer"] = .uint64(peer.rawValue)
        case .customerRefused(let payment, let peer, let error):
            (kind, id) = ("customerRefused", payment)
            details = Self.details(error).merging(["peer": .uint64(peer.rawValue)]) { $1 }
        case .accepted(let payment, let peer, let total):
            (kind, id) = ("accepted", payment)
            details = ["peer": .uint64(peer.rawValue), "total": .uint64(total.minorUnits), "currency": .string(total.currency.code)]
        case .acceptanceRefused(let payment, let peer, let error):
            (kind, id) = ("acceptanceRefused", payment)
            details = Self.details(error).merging(["peer": .uint64(peer.rawValue)]) { $1 }
        case .outcomePending(let payment):
            (kind, id) = ("outcomePending", payment)
        case .finished(let payment, let peer, let receipt):
            (kind, id) = ("finished", payment)
            details = Self.details(receipt).merging(["peer": .uint64(peer.rawValue)]) { $1 }
        case .failed(let payment, let peer, let error):
            (kind, id) = ("failed", payment)
            details = Self.details(error).merging(["peer": .uint64(peer.rawValue)]) { $1 }
        case .cancelled(let payment):
            (kind, id) = ("cancelled", payment)
        case .expired(let payment):
            (kind, id) = ("expired", payment)
        }
        return [.string(kind), .string(id.description), .stringDictionary(details)]
    }
}
