import BlepayDaemon
import BlepayLedgerClient
import LedgerTestSupport
import Testing

/// Whether a daemon believes the ledger reachable, and when it asks.
@Suite struct LedgerReachabilityTests {
    /// Nothing listens on the discard port: a probe that is sent finds the ledger unreachable.
    let reachability = LedgerReachability(
        ledger: LedgerClient(baseURL: "http://127.0.0.1:9", credentials: .none, logger: testLogger), logger: testLogger,
        meaning: (reachable: "reachable", unreachable: "unreachable"))

    /// Each settlement round probed the ledger beside the customer's own probe and the deny list's fetch (three
    /// calls where one said it all): a round now asks only when no call got an answer within its interval.
    @Test func aRecentAnswerStandsInForAProbe() async {
        reachability.record(true)
        #expect(await reachability.probe(unlessAnsweredWithin: .seconds(60)))
        #expect(reachability.isReachable)
        // Older than the window: asked, and not answered.
        #expect(await !reachability.probe(unlessAnsweredWithin: .zero))
        // A call that was not answered is no answer: the next round asks again.
        reachability.record(true)
        reachability.record(false)
        #expect(await !reachability.probe(unlessAnsweredWithin: .seconds(60)))
    }
}
