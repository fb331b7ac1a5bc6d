import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Logging

/// The customer daemon's accepted payments awaiting their outcome, in its state file: an acceptance the file cannot
/// take is not sent, and a failure to forget one only means it is sought once more after a restart.
public struct StoredAcceptances: AcceptedPayments {
    private let store: AcceptedPaymentStore
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger

    public init(store: AcceptedPaymentStore, clock: @escaping @Sendable () -> Timestamp, logger: Logger) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    public func keep(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) throws(PaymentError) {
        do {
            try store.keep(request, acceptance, at: clock())
        } catch {
            logger.error("an acceptance was not sent: the state file failed", metadata: [
                "payment": "\(request.paymentID)", "error": "\(error)",
            ])
            throw PaymentError(.unexpected, "the state file failed")
        }
    }

    public func concluded(_ id: PaymentID) {
        do {
            try store.remove(id)
        } catch {
            logger.warning("a concluded payment stays in the state file", metadata: ["payment": "\(id)", "error": "\(error)"])
        }
    }

    public func unconcluded() -> [KeptPayment] {
        do {
            return try store.entries().map { KeptPayment(request: $0.request, acceptance: $0.acceptance, keptAt: $0.acceptedAt) }
        } catch {
            logger.error("the accepted payments awaiting an outcome cannot be read", metadata: ["error": "\(error)"])
            return []
        }
    }
}
