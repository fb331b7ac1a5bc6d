import BlepayDaemonConfiguration
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Logging
import Synchronization

/// The customer daemon's `[vouchers] auto_renew`: called after each probe that reached the ledger, it obtains one
/// voucher when `VoucherRenewal` says one is due, so that the customer can pay an offline business while both are
/// offline. A failure is not retried at every probe (each try may move money, and a refusal would only repeat):
/// the wait doubles from a minute up to an hour, and a voucher obtained ends it.
public final class VoucherAutoRenew: Sendable {
    /// Each voucher obtained: drawn on `instrumentID`, of `limit`, valid `lifetimeSeconds`; and when one is due.
    public struct Settings: Sendable, Hashable {
        public let instrumentID: String
        public let limit: Money
        public let lifetimeSeconds: Int64
        public let policy: VoucherRenewal

        /// From `[vouchers]`; nil when auto-renew is off.
        public init?(_ configuration: DaemonConfiguration.Vouchers) {
            guard configuration.autoRenew, let currency = try? Currency(configuration.currency),
                let limit = try? Money(minorUnits: UInt64(configuration.limit), currency: currency)
            else { return nil }
            instrumentID = configuration.instrument
            self.limit = limit
            lifetimeSeconds = Int64(configuration.lifetimeHours) * 3600
            policy = VoucherRenewal(
                currency: currency, renewBelowMinorUnits: UInt64(configuration.renewBelow),
                renewBeforeMilliseconds: UInt64(configuration.renewBeforeHours) * 3_600_000)
        }
    }

    /// What one call did.
    public enum Outcome: Sendable, Hashable {
        /// Enough is held.
        case notDue
        /// Another call is obtaining one.
        case busy
        /// An earlier failure is waited out until then; nothing was asked.
        case backingOff(until: Timestamp)
        case obtained(StoredVoucher)
        /// Nothing was obtained, and nothing is tried again before `retryAt`.
        case failed(PaymentError, retryAt: Timestamp)
        /// The daemon stopped while asking: not a failure, and nothing waits for it.
        case stopped
    }

    static let firstWaitMilliseconds: UInt64 = 60_000
    static let longestWaitMilliseconds: UInt64 = 3_600_000

    private let settings: Settings
    private let vouchers: CustomerVouchers
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private let state = Mutex<(obtaining: Bool, failures: Int, retryAt: Timestamp?)>((false, 0, nil))

    public init(
        settings: Settings, vouchers: CustomerVouchers, clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) {
        self.settings = settings
        self.vouchers = vouchers
        self.clock = clock
        self.logger = logger
    }

    /// Obtains a voucher if one is due and no failure is being waited out.
    public func renewIfDue() async -> Outcome {
        let now = clock()
        let refused = state.withLock { state -> Outcome? in
            if state.obtaining { return .busy }
            if let retryAt = state.retryAt, now < retryAt { return .backingOff(until: retryAt) }
            state.obtaining = true
            return nil
        }
        if let refused { return refused }
        defer { state.withLock { $0.obtaining = false } }
        do throws(PaymentError) {
            guard settings.policy.isDue(holding: try vouchers.list(), at: now) else { return .notDue }
            let stored = try await vouchers.obtain(
                instrumentID: settings.instrumentID, limit: settings.limit, lifetimeSeconds: settings.lifetimeSeconds)
            state.withLock { state in (state.failures, state.retryAt) = (0, nil) }
            logger.info("obtained voucher \(stored.voucher.voucherID) of \(stored.voucher.limit) (auto-renew)")
            return .obtained(stored)
        } catch {
            if Task.isCancelled { return .stopped }
            let failedAt = clock()
            let (wait, retryAt) = state.withLock { state in
                state.failures += 1
                let wait = min(Self.firstWaitMilliseconds << min(state.failures - 1, 16), Self.longestWaitMilliseconds)
                let retryAt = failedAt.adding(milliseconds: wait)
                state.retryAt = retryAt
                return (wait, retryAt)
            }
            // The code alone: the detail is the ledger's free text.
            logger.warning("no voucher obtained (auto-renew)", metadata: [
                "error": "\(error.name)", "retry_in_seconds": "\(wait / 1000)",
            ])
            return .failed(error, retryAt: retryAt)
        }
    }
}
