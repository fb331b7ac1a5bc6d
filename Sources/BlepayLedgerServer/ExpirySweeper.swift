import BlepayLedgerStore
import BlepayProtocol
import Logging
import ServiceLifecycle

/// Ends what ran out of time: open payments past their expiry fail as expired, pre-authorizations past their
/// release (expiry plus grace, voided or not) return what is left, and old nonces and idempotency keys are forgotten.
/// It sleeps until the next of those deadlines (`LedgerOperations.nextExpiry`, one cheap read) and writes only when
/// one has come, so an idle ledger neither wakes nor writes. A change made through this process (which may bring an
/// earlier deadline) wakes it, at most once an `interval`; changes made by another ledger process on the same
/// database are seen within `longestSleep`, and that process sweeps its own deadlines too. With several processes
/// each sweeps; the rows each transaction locks keep them from doing the same work twice.
struct ExpirySweeper: Service, CustomStringConvertible {
    var description: String { "ExpirySweeper" }
    let storage: any LedgerStorage
    let operations: LedgerOperations
    let watch: ChangeWatch
    /// The shortest time between two sweeps, or two reads of the next deadline after changes.
    let interval: Duration
    var longestSleep: Duration = .seconds(60)
    let clock: @Sendable () -> Timestamp
    let logger: Logger

    /// What one pass found: something was due and is swept, or the time of the next deadline (nil: none).
    enum Pass: Sendable, Equatable {
        case swept
        case idle(until: Timestamp?)
    }

    func run() async {
        await cancelWhenGracefulShutdown { await sweep() }
    }

    /// Returns once cancelled (at shutdown): a sleep cut short is the normal way out, not a failure.
    private func sweep() async {
        while !Task.isCancelled {
            let seen = await watch.changes
            switch await pass() {
            case .swept:
                try? await Task.sleep(for: interval)
            case .idle(let deadline):
                let now = clock()
                let until = deadline.map { Self.duration(from: now, to: $0) } ?? longestSleep
                // Woken by a change: let further changes gather for an interval, then look again.
                if await watch.nextChange(after: seen, before: .now + min(until, longestSleep), polling: false) {
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    /// Sweeps if a deadline has come, else reads when the next one comes. A failure is logged and taken as due
    /// again after an interval; a pass cut short by shutdown is not a failure.
    func pass() async -> Pass {
        let now = clock()
        do {
            let next = try await storage.read { [operations] tx in try operations.nextExpiry(tx, at: now) }
            guard let next, next <= now else { return .idle(until: next) }
            let expired = try await storage.write { [operations] tx in try operations.expire(tx, at: now) }
            if !expired.payments.isEmpty || expired.preAuthorizations > 0 {
                logger.info("expired", metadata: [
                    "payments": "\(expired.payments.count)", "preAuthorizations": "\(expired.preAuthorizations)",
                ])
                await watch.changed()
            }
        } catch is CancellationError {
            // The ledger is stopping: what was due is swept at its next start.
        } catch {
            logger.warning("expiry sweep failed; retrying after an interval", metadata: ["error": "\(error)"])
        }
        return .swept
    }

    /// From `now` to `deadline` on the ledger's clock, as a wait (none if it has come).
    static func duration(from now: Timestamp, to deadline: Timestamp) -> Duration {
        deadline > now ? .milliseconds(Int64(clamping: deadline.millisecondsSince1970 - now.millisecondsSince1970)) : .zero
    }
}
