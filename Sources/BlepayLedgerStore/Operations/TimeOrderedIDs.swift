import BlepayProtocol
import Synchronization

/// Names the ledger gives its own rows, ordered by time (UUID version 7, RFC 9562: 48 bits of milliseconds, then a
/// 12-bit counter, then 62 random bits). A random name puts each insert on a random page of every index keyed by it,
/// each a page written to the WAL; a time-ordered one appends to the last page, which a group commit writes once.
/// Increasing within one process even when the clock stalls or steps back; across processes, ordered by time.
final class TimeOrderedIDs: Sendable {
    private struct State {
        var milliseconds: UInt64 = 0
        var counter: UInt16 = 0
    }

    private let state = Mutex(State())

    /// The next id at `now`, lower-case with dashes (36 characters).
    func next(at now: Timestamp) -> String {
        let (milliseconds, counter) = state.withLock { state in
            let clock = now.millisecondsSince1970 & 0xFFFF_FFFF_FFFF
            if clock > state.milliseconds {
                state = State(milliseconds: clock, counter: 0)
            } else if state.counter < 0x0FFF {
                state.counter += 1
            } else {  // 4,096 ids in one millisecond: borrow the next one
                state = State(milliseconds: state.milliseconds + 1, counter: 0)
            }
            return (state.milliseconds, state.counter)
        }
        var generator = SystemRandomNumberGenerator()
        let random = generator.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * index)) }
        bytes[6] = 0x70 | UInt8(counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        for index in 8..<16 { bytes[index] = UInt8(truncatingIfNeeded: random >> (56 - 8 * (index - 8))) }
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return [bytes[0..<4], bytes[4..<6], bytes[6..<8], bytes[8..<10], bytes[10..<16]].map(\.hex)
            .joined(separator: "-")
    }
}
