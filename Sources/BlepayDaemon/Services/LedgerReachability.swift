import BlepayLedgerClient
import Logging
import Synchronization

/// Whether the ledger can be reached now: what the last call to it said, or a probe (`GET /v1/ledger-key`). Only an
/// answer that never came counts as unreachable; a refusal is an answer. A probe is tried once, for at most 3 s: a
/// ledger that has gone away is noticed in seconds, not after a payment call's retries. Each change is logged once,
/// with what it means for this daemon's payments, and told to whoever follows `changes()`.
public final class LedgerReachability: Sendable {
    private let ledger: LedgerClient
    private let reachable = Mutex(true)
    private let followers = Mutex<[Int: AsyncStream<Bool>.Continuation]>([:])
    private let nextFollower = Atomic<Int>(0)
    private let logger: Logger
    private let meaning: (reachable: String, unreachable: String)
    private let metrics: DaemonMetrics?

    /// `meaning`: the log lines for a ledger that came back and one that went away.
    public init(
        ledger: LedgerClient, logger: Logger, meaning: (reachable: String, unreachable: String), metrics: DaemonMetrics? = nil
    ) {
        self.ledger = ledger.once(timeoutSeconds: 3)
        self.logger = logger
        self.meaning = meaning
        self.metrics = metrics
    }

    public var isReachable: Bool { reachable.withLock { $0 } }

    /// Asks the ledger for its key and records whether it answered.
    @discardableResult
    public func probe() async -> Bool {
        do {
            _ = try await ledger.ledgerKey()
            record(true)
        } catch {
            // A probe given up (the daemon stopping) says nothing of the ledger.
            if !error.isCancelled { record(!error.isUnavailable) }
        }
        return isReachable
    }

    /// Each change of `isReachable` from now on (only the latest, if several come before it is read).
    public func changes() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        let id = nextFollower.add(1, ordering: .relaxed).newValue
        followers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.followers.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    /// What a call to the ledger just showed.
    public func record(_ now: Bool) {
        let before = reachable.withLock { state in defer { state = now }; return state }
        metrics?.ledgerReachable(now)
        guard before != now else { return }
        for follower in followers.withLock({ Array($0.values) }) { follower.yield(now) }
        // Losing the ledger is what an operator looks into; its return is news only.
        if now { logger.notice("\(meaning.reachable)") } else { logger.warning("\(meaning.unreachable)") }
    }
}

extension LedgerClientError {
    /// The ledger did not answer at all (as opposed to refusing), or not over a connection this device trusts.
    var isUnavailable: Bool {
        switch self {
        case .unavailable, .tlsFailed, .insecureTransport: true
        case .refused, .cancelled, .invalidResponse: false
        }
    }
}
