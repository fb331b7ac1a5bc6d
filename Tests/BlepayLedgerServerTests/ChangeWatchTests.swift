@testable import BlepayLedgerServer
import Testing

/// A waiter takes the watch's count of changes before it reads, so a change that comes between its read and its wait
/// ends the wait at once instead of being missed until the deadline (the sweeper slept 60 s past an expiry that way).
@Suite struct ChangeWatchTests {
    @Test(.timeLimit(.minutes(1))) func aChangeBeforeTheWaitEndsItAtOnce() async {
        let watch = ChangeWatch(pollInterval: nil)
        let seen = await watch.changes
        await watch.changed()  // committed while the waiter was reading
        // Without the count this waits until the deadline, past the test's time limit.
        #expect(await watch.nextChange(after: seen, before: .now + .seconds(600), polling: false))
    }

    @Test func withoutAChangeTheWaitEndsAtItsDeadline() async {
        let watch = ChangeWatch(pollInterval: nil)
        #expect(await !watch.nextChange(after: await watch.changes, before: .now + .milliseconds(50), polling: false))
    }
}
