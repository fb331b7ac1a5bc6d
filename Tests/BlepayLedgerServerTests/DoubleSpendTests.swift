import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import TestSupport
import Testing

/// Claimed ranges, double-spend proofs and the device block, over HTTP on both databases.
@Suite struct DoubleSpendTests {
    struct Refusal: Equatable {
        let status: Int
        let code: String
        let paymentError: String?
    }

    /// How the ledger refused `call`; nil if it was carried out or failed otherwise.
    func refusal(_ call: () async throws -> Void) async -> Refusal? {
        do {
            try await call()
            return nil
        } catch {
            guard case .refused(let status, let detail)? = error as? LedgerClientError else { return nil }
            return Refusal(status: status, code: detail.code, paymentError: detail.paymentError)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aDoubleSpendIsRefusedWithItsProofAndBlocksTheDeviceWhileItsOtherClaimsSettle(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 10_000)
            let bob = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let first = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let reused = try voucher.pay(try ledger.request(by: bakery, amount: 700, online: false), sequence: 1, spentBefore: 1_000)
            let overlapping = try voucher.pay(try ledger.request(by: cafe, amount: 800, online: false), sequence: 2, spentBefore: 500)
            let goodFaith = try voucher.pay(try ledger.request(by: bakery, amount: 500, online: false), sequence: 3, spentBefore: 1_000)

            #expect(try await cafe.client.settle([first], operation: "batch-1").results.map(\.result) == [.settled])
            #expect(try await bakery.client.settle([reused], operation: "batch-2").results.map(\.result) == [.sequenceReused])
            #expect(try await cafe.client.settle([overlapping], operation: "batch-3").results.map(\.result) == [.rangeOverlap])
            // Accepted in good faith before anyone knew: it conflicts with nothing settled, so it settles.
            #expect(try await bakery.client.settle([goodFaith], operation: "batch-4").results.map(\.result) == [.settled])
            // Brought again, a double spend is refused again, with still one proof.
            #expect(try await bakery.client.settle([reused], operation: "batch-5").results.map(\.result) == [.sequenceReused])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 1_000)
            #expect(try await ledger.admin.account(bakery.account.id).balances.first?.posted == 500)

            let proofs = try await ledger.admin.doubleSpends()
            #expect(proofs.map(\.kind) == [.sequenceReused, .rangeOverlap])
            #expect(proofs.map(\.paymentId) == [reused.0.paymentID.description, overlapping.0.paymentID.description])
            #expect(proofs.allSatisfy { proof in
                proof.deviceKey == alice.key.publicKey.bytes.hex && proof.voucherId == voucher.voucher.voucherID.description
                    && proof.settledPaymentId == first.0.paymentID.description && proof.settledMerchantId == cafe.account.id
                    && proof.settledAcceptance == Data(first.1.encoded).base64EncodedString()
            })
            #expect(proofs[0].acceptance == Data(reused.1.encoded).base64EncodedString() && proofs[0].merchantId == bakery.account.id)

            // The device is blocked: no new voucher, no online payment; another customer still pays the request.
            let blocked = Refusal(status: 422, code: "ledger.device-blocked", paymentError: "blocked")
            let noVoucher = await refusal { _ = try await TestVoucher(ledger, alice, limit: 1_000) }
            #expect(noVoucher == blocked)
            let online = try ledger.request(by: cafe, amount: 300)
            _ = try await cafe.client.createPayment(online)
            let noPayment = await refusal { _ = try await cafe.client.accept(try ledger.acceptance(of: online, by: alice), request: nil) }
            #expect(noPayment == blocked)
            #expect(try await cafe.client.accept(try ledger.acceptance(of: online, by: bob), request: nil).status == .settled)

            let denyList = try await cafe.client.denyList()
            try denyList.verify(trusting: TrustedLedgerKeys([ledger.server.ledgerKey.publicKey]), at: denyList.issuedAt,
                maximumAge: 60_000)
            #expect(denyList.blockedKeys == [alice.key.publicKey] && denyList.voidedVouchers == [])
            #expect(try await ledger.server.audit() == [])

            // A refusal whose proof is gone is reported, from the settlement's stored answer.
            try await ledger.storage.storage.write { tx in
                try tx.run("DELETE FROM double_spends WHERE payment = ?", [.text(overlapping.0.paymentID.description)])
            }
            #expect(try await ledger.server.audit()
                == ["payment \(overlapping.0.paymentID) of merchant \(cafe.account.id) was refused as a double spend without a stored proof"])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func theAuditReportsAProofThatProvesNothing(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let first = try voucher.pay(try ledger.request(by: cafe, amount: 1_000, online: false), sequence: 1, spentBefore: 0)
            let reused = try voucher.pay(try ledger.request(by: cafe, amount: 700, online: false), sequence: 1, spentBefore: 1_000)
            let honest = try voucher.pay(try ledger.request(by: cafe, amount: 700, online: false), sequence: 2, spentBefore: 1_000)
            #expect(try await cafe.client.settle([first, reused, honest], operation: "batch-1").results.map(\.result)
                == [.settled, .sequenceReused, .settled])
            #expect(try await ledger.server.audit() == [])
            // The refused acceptance is swapped for one that conflicts with nothing.
            try await ledger.storage.storage.write { tx in
                try tx.run("UPDATE double_spends SET acceptance = ?", [.blob(honest.1.encoded)])
            }
            let problems = try await ledger.server.audit()
            #expect(problems.count == 1 && problems[0].contains("is not a proof"))
        }
    }

    /// Random honest uses of one voucher, uploaded in random batches and order by random merchants, all settle; a
    /// cheating customer's reused sequences and overlapping ranges never settle twice nor past the limit, each refusal
    /// has its proof, and the books stay sound.
    @Test(arguments: StorageKind.allCases)
    func honestUsesSettleInAnyOrderAndCheatsNeverPayTwice(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            var generator = SplitMix64(seed: kind == .sqlite ? 0x5E771E : 0x5E771F)
            var merchants: [RunningLedger.Party] = []
            for name in ["Café", "Bakery", "Kiosk"] { merchants.append(try await ledger.merchant(name)) }
            let limit: UInt64 = 5_000
            for round in 0..<6 {
                let customer = try await ledger.customer(balance: 10_000)
                let voucher = try await TestVoucher(ledger, customer, limit: Int64(limit))
                var items: [(merchant: RunningLedger.Party, payment: (PaymentRequest, PaymentAcceptance), honest: Bool)] = []
                var spent: UInt64 = 0
                for sequence in 1...UInt32.random(in: 1...8, using: &generator) where spent < limit {
                    let amount = UInt64.random(in: 1...min(limit - spent, 1_500), using: &generator)
                    let merchant = merchants.randomElement(using: &generator)!
                    items.append((merchant, try voucher.pay(try ledger.request(by: merchant, amount: amount, online: false),
                        sequence: sequence, spentBefore: spent), true))
                    spent += amount
                }
                let cheating = round % 2 == 1
                if cheating {
                    for _ in 0..<Int.random(in: 1...4, using: &generator) {
                        let merchant = merchants.randomElement(using: &generator)!
                        let request = try ledger.request(by: merchant, amount: UInt64.random(in: 1...2_000, using: &generator), online: false)
                        items.append((merchant, try voucher.pay(request, sequence: UInt32.random(in: 1...UInt32(items.count + 1), using: &generator),
                            spentBefore: UInt64.random(in: 0..<limit, using: &generator)), false))
                    }
                }
                items.shuffle(using: &generator)
                var results: [String: PreAuthorization.Settlement] = [:]
                var batch = 0
                while !items.isEmpty {
                    // A random merchant uploads what it holds of the next few.
                    let merchant = items[0].merchant
                    let taken = Array(items.prefix(Int.random(in: 1...3, using: &generator)).filter { $0.merchant.account.id == merchant.account.id })
                    items.removeAll { item in taken.contains { $0.payment.0.paymentID == item.payment.0.paymentID } }
                    batch += 1
                    let answer = try await merchant.client.settle(taken.map(\.payment), operation: "round-\(round)-batch-\(batch)")
                    for (item, result) in zip(taken, answer.results) {
                        results[item.payment.0.paymentID.description] = result.result
                        if item.honest && !cheating { #expect(result.result == .settled, "round \(round)") }
                    }
                }
                let preAuthorization = try await customer.client.preAuthorization(voucher.voucher.voucherID.description)
                #expect(preAuthorization.spent <= Int64(limit), "round \(round)")
                #expect(results.values.allSatisfy { [.settled, .sequenceReused, .rangeOverlap, .voucherExceeded].contains($0) })
                let proofs = Set(try await ledger.admin.doubleSpends().map(\.paymentId))
                #expect(results.filter { $0.value.isDoubleSpend }.allSatisfy { proofs.contains($0.key) }, "round \(round)")
            }
            var credited: Int64 = 0
            for merchant in merchants { credited += try await ledger.admin.account(merchant.account.id).balances.first?.posted ?? 0 }
            #expect(credited <= 6 * Int64(limit))
            #expect(try await ledger.server.audit() == [])
        }
    }
}
