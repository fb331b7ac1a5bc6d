@testable import BlepayLedgerStore
import BlepayProtocol
import Testing

/// The names the ledger gives its own rows sort by time, and never repeat.
@Suite struct TimeOrderedIDTests {
    let t0 = Timestamp(millisecondsSince1970: 1_795_000_000_000)

    @Test func idsAreUUIDVersion7WithTheirMillisecond() {
        let id = TimeOrderedIDs().next(at: t0)
        let hex = id.split(separator: "-").joined()
        #expect(id.count == 36 && id.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
        #expect(UInt64(hex.prefix(12), radix: 16) == t0.millisecondsSince1970)
        #expect(hex.dropFirst(12).first == "7")
        #expect("89ab".contains(hex.dropFirst(16).first!))
    }

    @Test func idsIncreaseWithTimeAndWithinOneMillisecond() {
        let ids = TimeOrderedIDs()
        var made: [String] = []
        for step in 0..<3 {
            for _ in 0..<5_000 { made.append(ids.next(at: t0.adding(milliseconds: UInt64(step)))) }
        }
        #expect(made == made.sorted())
        #expect(Set(made).count == made.count)
    }

    @Test func aClockThatStepsBackDoesNotReorderThem() {
        let ids = TimeOrderedIDs()
        let later = ids.next(at: t0.adding(milliseconds: 1_000))
        let afterStepBack = ids.next(at: t0)
        #expect(later < afterStepBack)
    }

    @Test func processesAtDifferentTimesSortByTime() {
        let first = TimeOrderedIDs().next(at: t0)
        let second = TimeOrderedIDs().next(at: t0.adding(milliseconds: 1))
        #expect(first < second)
    }
}
