import BlepayProtocol
import Synchronization

/// Wakes one waiting loop when something it waits for may have happened (`signal`), or at the next deadline it
/// named: what lets drivers and transports sleep while idle instead of looking every second. A signal that comes
/// while nobody waits is kept for the next wait, so none is lost between two looks.
public final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiting loop, or the next one to wait.
    public func signal() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the first signal since the last return, at `deadline` (never without one), or when the calling
    /// task is cancelled. One task waits at a time.
    public func wait(until deadline: ContinuousClock.Instant?) async {
        let timer = deadline.map { deadline in
            Task { [self] in
                guard (try? await Task.sleep(until: deadline)) != nil else { return }
                signal()
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    // Cancellation is checked under the lock its handler takes, so that it cannot slip in between.
                    guard !state.signalled, !Task.isCancelled else {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    /// Calls `fire` each time the instant `deadline` names has passed, and asks `deadline` again after each
    /// signal, until the calling task is cancelled; sleeps in between, without a deadline until a signal. A deadline
    /// is the last instant at which nothing is due yet, so `fire` comes just past it.
    public func keepTime(
        deadline: () async -> ContinuousClock.Instant?, fire: () async -> Void
    ) async {
        while !Task.isCancelled {
            let next = await deadline()
            if let next, ContinuousClock.now > next {
                await fire()
                continue
            }
            await wait(until: next.map { $0 + Self.pastDeadline })
        }
    }

    /// The continuous-clock instant of a machine's wall-clock deadline, `now` being the wall clock read now; at
    /// most `wallClockHorizon` ahead, since the wall clock may be stepped (NTP) and the continuous one is not: a
    /// deadline further off is converted again then.
    public static func instant(of deadline: Timestamp, now: Timestamp) -> ContinuousClock.Instant {
        let ahead = Int64(clamping: deadline.millisecondsSince1970) - Int64(clamping: now.millisecondsSince1970)
        return .now + min(.milliseconds(ahead), wallClockHorizon)
    }

    static let wallClockHorizon: Duration = .seconds(60)

    /// How far past a deadline `keepTime` fires: time-outs act once their deadline has passed.
    static let pastDeadline: Duration = .milliseconds(1)
}
