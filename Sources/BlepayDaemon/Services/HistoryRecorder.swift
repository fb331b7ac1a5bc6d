import BlepayControl
import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Foundation
import Logging

/// Writes each payment event, with the payment as its machine then knows it, to the daemon's payment history, and
/// logs one line for it. A write that fails is logged and dropped: the history never holds a payment up.
public struct HistoryRecorder: Sendable {
    public let history: PaymentHistory
    let role: DaemonConfiguration.Role
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    let metrics: DaemonMetrics

    public init(
        history: PaymentHistory, role: DaemonConfiguration.Role, clock: @escaping @Sendable () -> Timestamp, logger: Logger,
        metrics: DaemonMetrics? = nil
    ) {
        self.history = history
        self.role = role
        self.clock = clock
        self.logger = logger
        self.metrics = metrics ?? .none(role)
    }

    /// A business event (or a settlement verdict, on either side), with the payment as `snapshot` finds it in its
    /// machine (nil once the machine no longer holds it).
    func record(_ event: BusinessEvent, snapshot: (PaymentID) async -> PaymentSnapshot? = { _ in nil }) async {
        let receipt: Receipt? = switch event {
        case .finished(_, _, let receipt): receipt
        case .settled(_, let receipt): receipt
        default: nil
        }
        await record(ControlEvent(event), snapshot, receipt)
    }

    func record(_ event: CustomerEvent, snapshot: (PaymentID) async -> PaymentSnapshot?) async {
        let receipt: Receipt? = switch event {
        case .finishedPayment(_, let receipt), .outcomeFound(_, _, .success(let receipt)): receipt
        default: nil
        }
        await record(ControlEvent(event), snapshot, receipt)
    }

    private func record(
        _ event: ControlEvent, _ find: (PaymentID) async -> PaymentSnapshot?, _ eventReceipt: Receipt?
    ) async {
        metrics.paymentEvent(event.kind.rawValue)
        guard let id = try? ControlAPI.paymentID(event.paymentID) else {
            if event.kind == .error { metrics.sessionFailed(code: event.details.code ?? "unexpected") }
            return
        }
        let snapshot = await find(id)
        if [.finished, .finishedPayment].contains(event.kind), let created = snapshot?.request.createdAt {
            metrics.paid(afterMilliseconds: clock().millisecondsSince1970 &- created.millisecondsSince1970)
        }
        let details = event.details
        // What the event says of the money and of an error; never keys, tokens or card data.
        var metadata: Logger.Metadata = ["payment": "\(id)", "event": "\(event.kind.rawValue)"]
        for (key, value) in [("amount", details.amount.map { "\($0)" }), ("currency", details.currency), ("code", details.code)] {
            if let value { metadata[key] = "\(value)" }
        }
        logger.info("payment event", metadata: metadata)
        let receipt = eventReceipt ?? snapshot?.receipt
        guard let (status, ended) = Self.status(event, snapshot, receipt) else { return }
        let change = HistoryChange(
            paymentID: id, request: snapshot?.request, status: status, ended: ended,
            totalMinorUnits: details.total ?? receipt.map { $0.amount.minorUnits + $0.tipMinorUnits },
            tipMinorUnits: receipt?.tipMinorUnits,
            counterpart: role == .customer
                ? snapshot?.request.merchantName : receipt.map { TrustedLedgerKeys.keyID(of: $0.payerKey).description },
            receipt: receipt, event: HistoryEvent(kind: event.kind.rawValue, at: clock(), details: Self.json(details)))
        do {
            try history.record(change)
        } catch {
            logger.error("a payment event could not be kept in the history", metadata: [
                "payment": "\(id)", "event": "\(event.kind.rawValue)", "error": "\(error)",
            ])
        }
    }

    /// The status name and whether it ended: the verdicts', else the machine's (finished pending settlement is not
    /// ended yet), else what an outcome found says; nil when nothing tells.
    private static func status(_ event: ControlEvent, _ snapshot: PaymentSnapshot?, _ receipt: Receipt?) -> (String, Bool)? {
        switch event.kind {
        case .settled: return ("settled", true)
        case .settlementRefused: return ("settlement-refused", true)
        default: break
        }
        if let snapshot {
            return (snapshot.status.name, snapshot.status.isFinal && receipt?.status != .pendingSettlement)
        }
        guard event.kind == .outcomeFound else { return nil }
        return receipt.map { ("finished", $0.status != .pendingSettlement) } ?? ("failed", true)
    }

    static func json(_ details: ControlDetails) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(details)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
