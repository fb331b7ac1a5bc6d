import BlepayDaemonStore
import BlepayProtocol
import Logging

/// Forgets ended payments older than `[history] retention_days`: at start and then daily, beside the payments. First
/// it ends the payments a stopped daemon left open, once their request has expired.
struct HistoryRetention: Sendable {
    static let interval = Duration.seconds(86_400)
    /// Past a request's expiry, how long before no machine can hold it open: the protocol's clock tolerance.
    static let lapseGrace: UInt64 = 300_000

    let recorder: HistoryRecorder
    let days: Int

    func prune() {
        let age = UInt64(days) * 86_400_000
        let now = recorder.clock().millisecondsSince1970
        let cutoff = Timestamp(millisecondsSince1970: now > age ? now - age : 0)
        do {
            let lapsed = try recorder.history.endLapsed(at: Timestamp(millisecondsSince1970: now), grace: Self.lapseGrace)
            if lapsed > 0 { recorder.logger.info("payments left open past their expiry ended", metadata: ["count": "\(lapsed)"]) }
            let forgotten = try recorder.history.prune(endedBefore: cutoff)
            if forgotten > 0 {
                recorder.logger.info("ended payments past retention forgotten", metadata: ["count": "\(forgotten)", "days": "\(days)"])
            }
        } catch {
            recorder.logger.error("the payment history could not be pruned", metadata: ["error": "\(error)"])
        }
    }
}

extension HistoryRecorder {
    /// The daemon's history, in its state file.
    static func daemon(_ context: DaemonContext) -> HistoryRecorder {
        HistoryRecorder(
            history: PaymentHistory(store: context.store), role: context.configuration.role, clock: context.clock,
            logger: context.logger, metrics: context.metrics)
    }

    /// The service that prunes it.
    func retention(days: Int) -> ProbeService {
        let retention = HistoryRetention(recorder: self, days: days)
        return ProbeService(interval: HistoryRetention.interval) { retention.prune() }
    }
}
