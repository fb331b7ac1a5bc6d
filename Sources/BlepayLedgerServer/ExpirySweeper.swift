import BlepayLedgerStore
import BlepayProtocol
import Logging
import ServiceLifecycle

/// Ends what ran out of time: open payments past their expiry fail as expired, pre-authorizations past their
/// release (expiry plus grace, voided or not) return what is left, and old nonces and idempotency keys are forgotten. With several ledger processes each
/// sweeps; the rows each transaction locks keep them from doing the same work twice.
struct ExpirySweeper: Service {
    let storage: any LedgerStorage
    let operations: LedgerOperations
    let watch: PaymentWatch
    let interval: Duration
    let clock: @Sendable () -> Timestamp
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown { await sweep() }
    }

    /// Returns once cancelled (at shutdown): a sleep cut short is the normal way out, not a failure.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: interval)
            guard !Task.isCancelled else { return }
            let now = clock()
            do {
                let expired = try await storage.write { [operations] tx in try operations.expire(tx, at: now) }
                if !expired.payments.isEmpty || expired.preAuthorizations > 0 {
                    logger.info("expired", metadata: [
                        "payments": "\(expired.payments.count)", "preAuthorizations": "\(expired.preAuthorizations)",
                    ])
                    await watch.changed()
                }
            } catch {
                logger.warning("expiry sweep failed; retrying at the next", metadata: ["error": "\(error)"])
            }
        }
    }
}
