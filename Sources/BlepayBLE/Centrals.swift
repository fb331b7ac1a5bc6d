import BlueZ
import DBusKit
import Synchronization

/// The centrals connected to a customer, as BlueZ announces them and as their writes show: when each came, the
/// writes being answered, and whether it is being hung up. A central being hung up has its writes refused at once
/// and is disconnected only once none is left unanswered and it has gone quiet (`quieted`).
final class Centrals: Sendable {
    private struct Central {
        let since: ContinuousClock.Instant
        var writing = 0
        var lastWrite: ContinuousClock.Instant?
        var overdue = false
        var closing = false
    }

    private let centrals = Mutex<[DBusObjectPath: Central]>([:])

    var isEmpty: Bool { centrals.withLock { $0.isEmpty } }
    var devices: [DBusObjectPath] { centrals.withLock { Array($0.keys) } }

    /// A central connected (or wrote before its connection was announced).
    func connected(_ device: DBusObjectPath) {
        centrals.withLock { centrals in
            if centrals[device] == nil { centrals[device] = Central(since: .now) }
        }
    }

    /// The central's link went down; false if it was not connected (or already gone).
    func disconnected(_ device: DBusObjectPath) -> Bool {
        centrals.withLock { $0.removeValue(forKey: device) } != nil
    }

    /// Centrals connected for longer than `limit`, each returned once.
    func overdue(after limit: Duration, at now: ContinuousClock.Instant) -> [DBusObjectPath] {
        centrals.withLock { centrals in
            let due = centrals.filter { !$0.value.overdue && !$0.value.closing && now - $0.value.since > limit }.keys
            for device in due { centrals[device]?.overdue = true }
            return Array(due)
        }
    }

    /// When `overdue(after:at:)` will next return a central: the earliest arrival plus `limit` of those not yet
    /// returned nor being hung up.
    func nextOverdue(after limit: Duration) -> ContinuousClock.Instant? {
        centrals.withLock { centrals in
            centrals.values.filter { !$0.overdue && !$0.closing }.map { $0.since + limit }.min()
        }
    }

    /// Whether some central is connected and not being hung up.
    var hasOpen: Bool { centrals.withLock { $0.values.contains { !$0.closing } } }

    /// Handles a central's write with `body`, counted as unanswered until it returns. A central being hung up has
    /// its writes refused, and they count towards its going quiet like any other.
    func write(_ device: DBusObjectPath, _ body: () throws(BlueZError) -> Void) throws(BlueZError) {
        let closing = centrals.withLock { centrals in
            var central = centrals[device] ?? Central(since: .now)
            central.writing += 1
            centrals[device] = central
            return central.closing
        }
        defer {
            centrals.withLock { centrals in
                centrals[device]?.writing -= 1
                centrals[device]?.lastWrite = .now
            }
        }
        guard !closing else { throw BlueZError(.notPermitted, "the link is being closed") }
        try body()
    }

    /// Marks the central as being hung up; false if it already was, or is gone.
    func startClosing(_ device: DBusObjectPath) -> Bool {
        centrals.withLock { centrals in
            guard centrals[device]?.closing == false else { return false }
            centrals[device]?.closing = true
            return true
        }
    }

    /// Waits until every write of the central has been answered and none has come for `quiet`, or `limit` has
    /// passed, or the central is gone.
    func quieted(_ device: DBusObjectPath, quiet: Duration, limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while !Task.isCancelled {
            let now = ContinuousClock.now
            guard let central = centrals.withLock({ $0[device] }), now < deadline else { return }
            let wake: ContinuousClock.Instant
            if central.writing > 0 {
                // A handler runs for microseconds: look again shortly.
                wake = now + .milliseconds(5)
            } else if let last = central.lastWrite, now - last < quiet {
                wake = last + quiet
            } else {
                return
            }
            try? await Task.sleep(until: min(wake, deadline))
        }
    }
}
