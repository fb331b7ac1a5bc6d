import Foundation
import Testing
import TestSupport

/// Every binary names blepay's version and the commit it was built from.
@Suite struct VersionTests {
    @Test(arguments: ["blepayd": "BLEPAYD", "blepayctl": "BLEPAYCTL", "blepay-ledger": "BLEPAY_LEDGER",
        "blepay-loopback": "BLEPAY_LOOPBACK"])
    func versionNamesTheReleaseAndTheCommit(product: String, variable: String) throws {
        let result = try BuiltProduct(product, overriddenBy: variable).run(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "\(try BuildStamp.line())\n")
        #expect(try BuildStamp.version().wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/) != nil)
    }
}
