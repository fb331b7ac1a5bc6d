import BlepayDaemonStore
import BlepayProtocol
import Crypto
import Foundation
import GRDB
import TestSupport
import Testing

/// A customer killed (`SIGKILL`) at random points while it signs against a voucher: every use it got back was on
/// disk, no sequence and no part of the voucher's range was handed out twice, and the uses add up.
@Suite struct VoucherCrashTests {
    static let childVariable = "BLEPAY_WALLET_CRASH_CHILD"

    @Test func aKilledCustomerNeverSignsOneRangeTwice() async throws {
        let f = try WalletFixture()
        try f.wallet().add(try f.voucher(100_000_000))
        let signed = try await onOwnThread { try Self.killChildren(400, f) }
        try Self.expectNothingSignedTwice(signed, f)
    }

    /// Starts `count` children one after another, each killed at a random point; what they printed they signed.
    static func killChildren(_ count: Int, _ f: WalletFixture) throws -> [String] {
        var signed: [String] = []
        var generator = SystemRandomNumberGenerator()
        let environment = [
            Self.childVariable: f.path,
            "BLEPAY_WALLET_CRASH_KEYS": Data(f.device.publicKey.rawRepresentation + f.ledger.publicKey.rawRepresentation)
                .base64EncodedString(),
        ]
        for _ in 0..<count {
            // Started, then killed somewhere between opening the file and a few hundred uses in.
            let output = try runTestChild(
                "VoucherCrashTests.signUntilKilled", environment: environment,
                killAfter: Double.random(in: 0.05...0.6, using: &generator))
            signed += output.split(separator: "\n").filter { $0.hasPrefix("signed ") }.map(String.init)
        }
        return signed
    }

    static func expectNothingSignedTwice(_ signed: [String], _ f: WalletFixture) throws {

        let uses = try DatabaseQueue(path: f.path).read { db in
            try Row.fetchAll(db, sql: "SELECT sequence, spent_before, total FROM voucher_uses ORDER BY sequence")
                .map { row in (row["sequence"] as Int64, row["spent_before"] as Int64, row["total"] as Int64) }
        }
        #expect(!signed.isEmpty, "no child signed anything before it was killed")
        // Sequences 1…n with no gap or repeat; each range starts where the one before ended.
        #expect(uses.map(\.0) == Array(1...Int64(uses.count)))
        var spent: Int64 = 0
        for use in uses {
            #expect(use.1 == spent, "use \(use.0) starts at \(use.1), not \(spent)")
            spent += use.2
        }
        let held = try #require(try f.wallet().vouchers().first)
        #expect(Int64(held.spentMinorUnits) == spent && Int64(held.uses) == Int64(uses.count))
        // Everything a child was handed to sign is on disk, and nothing was handed out twice.
        let stored = Set(uses.map { "signed \($0.0) \($0.1) \($0.2)" })
        #expect(Set(signed).isSubset(of: stored))
        #expect(Set(signed).count == signed.count)
    }

    /// The child `aKilledCustomerNeverSignsOneRangeTwice` starts and kills: signs against the voucher as fast as it
    /// can, printing each use it was handed. Runs only in such a child.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
    func signUntilKilled() throws {
        let environment = ProcessInfo.processInfo.environment
        let keys = try #require(environment["BLEPAY_WALLET_CRASH_KEYS"].flatMap { Data(base64Encoded: $0) })
        let wallet = VoucherWallet(
            store: try DaemonStore(path: try #require(environment[Self.childVariable])),
            deviceKey: try Key32(Array(keys.prefix(32))), trusting: TrustedLedgerKeys([try Key32(Array(keys.suffix(32)))]))
        let now = Timestamp(millisecondsSince1970: 1_800_000_000_000)
        while true {
            let total = UInt64.random(in: 1...100)
            let use = try wallet.present(.random(), total: eur(total), at: now)
            FileHandle.standardOutput.write(Data("signed \(use.sequence) \(use.spentBeforeMinorUnits) \(total)\n".utf8))
        }
    }
}
