@testable import BlepayBLE
import Testing

/// The business's discovery restarts: soon after a customer was served, then further and further apart while
/// nothing happens, so that an idle business is not woken every `rescanInterval` forever.
@Suite struct RescanTests {
    @Test func restartsBackOffWhileIdleAndComeSoonAgainAfterActivity() {
        let start = ContinuousClock.now
        var rescan = Rescan(first: .seconds(10), at: start)
        #expect(rescan.due == start + .seconds(10))
        var now = rescan.due
        var gaps: [Duration] = []
        for _ in 0..<7 {
            rescan.restarted(at: now)
            gaps.append(rescan.due - now)
            now = rescan.due
        }
        #expect(gaps == [20, 40, 80, 160, 160, 160, 160].map { .seconds($0) })
        rescan.activity(at: now)
        #expect(rescan.due == now + .seconds(10))
    }
}
