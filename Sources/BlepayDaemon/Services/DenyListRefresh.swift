import BlepayDaemonStore
import BlepayLedgerClient
import BlepayProtocol
import Logging
import Synchronization

/// A daemon's copy of the ledger's deny list (voided vouchers, blocked devices), what the business checks vouchers
/// against, and the customer merchants' keys, while they cannot ask: a list is taken only with the signature of a
/// trusted ledger key, kept in the state file before it is used, and replaced only by a newer one.
public struct DenyListRefresh: Sendable {
    let store: DenyListStore
    let ledger: LedgerClient
    let trusted: TrustedLedgerKeys
    /// A list older than this is of no use (`OfflinePolicy`), so none is taken.
    let maximumAgeMilliseconds: UInt64
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    /// The least time between two fetches the ledger did not ask for: each answer to the standing call may ask.
    let minimumInterval: Duration
    private let lastFetch = LastFetch()

    /// When the list was last asked for, shared by the copies of this value.
    private final class LastFetch: Sendable {
        let instant = Mutex<ContinuousClock.Instant?>(nil)
    }

    public init(
        store: DenyListStore, ledger: LedgerClient, trusted: TrustedLedgerKeys, maximumAgeMilliseconds: UInt64,
        minimumInterval: Duration = .zero, clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) {
        self.store = store
        self.ledger = ledger
        self.trusted = trusted
        self.maximumAgeMilliseconds = maximumAgeMilliseconds
        self.minimumInterval = minimumInterval
        self.clock = clock
        self.logger = logger
    }

    /// The list kept from before, if any.
    func kept() -> DenyList? {
        do {
            return try store.latest()
        } catch {
            logger.error("the kept deny list cannot be read", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func isDue(after last: ContinuousClock.Instant?, at now: ContinuousClock.Instant) -> Bool {
        last.map { now - $0 >= minimumInterval } ?? true
    }

    /// Asks the ledger for its list if due (or, with `force`, because the ledger said it changed), and tells
    /// `reachability` whether it answered; returns the list once kept, if it is newer than the one kept.
    func refresh(reporting reachability: LedgerReachability? = nil, force: Bool = false) async -> DenyList? {
        let now = ContinuousClock.now
        let due = lastFetch.instant.withLock { last in
            guard force || isDue(after: last, at: now) else { return false }
            last = now
            return true
        }
        guard due else { return nil }
        let list: DenyList
        do throws(LedgerClientError) {
            list = try await ledger.denyList()
            reachability?.record(true)
        } catch {
            if error.isCancelled { return nil }
            if error.isUnavailable { reachability?.record(false) }
            logger.warning("the ledger's deny list was not fetched", metadata: ["error": "\(error)"])
            return nil
        }
        do throws(ProtocolError) {
            try list.verify(trusting: trusted, at: clock(), maximumAge: maximumAgeMilliseconds)
        } catch {
            logger.warning("the ledger's deny list was refused", metadata: ["error": "\(error)"])
            return nil
        }
        do {
            guard try store.keep(list) else { return nil }
        } catch {
            logger.error("the deny list could not be kept", metadata: ["error": "\(error)"])
            return nil
        }
        logger.debug("deny list kept", metadata: [
            "vouchers": "\(list.voidedVouchers.count)", "devices": "\(list.blockedKeys.count)",
        ])
        return list
    }
}
