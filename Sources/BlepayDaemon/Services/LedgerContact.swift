import BlepayLedgerClient
import Logging

/// A daemon's standing call at the ledger (`GET /v1/changes`), in place of polling it. The ledger holds the call until
/// what this device follows changes (the deny list, the refunds of its payments) or `wait` seconds pass, so that
/// while nothing happens neither side wakes; a ledger that stops answers or closes it, and one cut off is found by
/// the connection's keepalive. An answer means reachable. Once the ledger is found unreachable (by this call or any
/// other), it is probed every `retry` until it answers, and the call is made again.
struct LedgerContact: Sendable {
    let ledger: LedgerClient
    let reachability: LedgerReachability
    /// How long the ledger is asked to hold each call.
    var wait = 240
    /// Between probes while the ledger cannot be reached, and between calls to a ledger that refuses them.
    let retry: Duration
    let logger: Logger

    /// Until cancelled. `answered(changed)` runs after each answer: `changed` for the first, whenever what the device
    /// follows changed, and at each call a ledger refused (one that has no standing calls is polled every `retry`).
    func run(_ answered: @escaping @Sendable (_ changed: Bool) async -> Void) async {
        let losses = reachability.changes()
        let returns = reachability.changes()
        await withDiscardingTaskGroup { group in
            group.addTask { await hold(until: returns, answered) }
            group.addTask { await probe(after: losses) }
        }
    }

    private func hold(until returns: AsyncStream<Bool>, _ answered: @Sendable (Bool) async -> Void) async {
        var token: String?
        var returned = returns.makeAsyncIterator()
        while !Task.isCancelled {
            do throws(LedgerClientError) {
                let asked = ContinuousClock.now
                let changes = try await ledger.changes(after: token, wait: wait)
                reachability.record(true)
                let changed = changes.token != token
                token = changes.token
                await answered(changed)
                // Unchanged before its wait ended: a ledger that stops answers what it holds. Not asked again at once.
                if !changed, ContinuousClock.now - asked < .seconds(wait - 1) {
                    guard (try? await Task.sleep(for: retry)) != nil else { return }
                }
            } catch where error.isCancelled {
                return
            } catch where error.isUnavailable {
                reachability.record(false)
                // `probe` finds it back; then what changed meanwhile is answered at once.
                while !reachability.isReachable {
                    guard await returned.next() != nil else { return }
                }
            } catch {
                logger.debug("the ledger refused its standing call", metadata: ["error": "\(error)"])
                reachability.record(true)
                await answered(true)
                guard (try? await Task.sleep(for: retry)) != nil else { return }
            }
        }
    }

    private func probe(after losses: AsyncStream<Bool>) async {
        for await _ in losses where !reachability.isReachable {
            while !reachability.isReachable, (try? await Task.sleep(for: retry)) != nil {
                if !reachability.isReachable { await reachability.probe() }
            }
        }
    }
}
