import Foundation
import LedgerTestSupport
import Testing

@testable import BlepayLedgerServer

/// Every answer carries `Date` (RFC 9110 §6.6.1) and `Server`, formatted as a response needs them: the ledger runs no
/// timer to keep the date current.
@Suite struct HTTPDateTests {
    @Test func theDateIsAnIMFFixdateInGMT() {
        #expect(HTTPDate.text(for: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.text(for: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test func everyAnswerIsDatedAndNamesTheLedger() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            for path in ["/v1/health", "/v1/no-such-route"] {
                let before = time(nil)
                let answer = try await ledger.raw("GET", path)
                let after = time(nil)
                let date = try #require(answer.headers.first(name: "Date"))
                #expect((before...after).map(HTTPDate.text(for:)).contains(date), "\(date)")
                #expect(answer.headers.first(name: "Server") == "blepay-ledger")
            }
        }
    }
}
