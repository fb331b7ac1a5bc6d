import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// `GET /v1/payments`: a merchant's payments, online and settled offline, newest first, a page at a time with a
/// cursor that new payments do not move; the payments a customer paid; the operator's by merchant or account; and
/// bad queries refused with the field they name; over HTTP on both databases.
@Suite struct PaymentListingTests {
    /// Every page of `list`, following the cursors; `between` runs after the first page.
    static func pages(limit: Int, between: () async throws -> Void = {},
        _ list: (String?) async throws -> PaymentPage) async throws -> [PaymentResource]
    {
        var page = try await list(nil)
        #expect(page.data.count <= limit)
        var all = page.data
        try await between()
        while let cursor = page.nextCursor {
            page = try await list(cursor)
            #expect(page.data.count <= limit)
            all += page.data
        }
        return all
    }

    /// An online payment's time is its creation, an offline one's its settlement: the first of its history.
    static func time(_ payment: PaymentResource) -> UInt64 { payment.history.first?.at ?? 0 }

    @Test(arguments: StorageKind.allCases)
    func eachPartySeesItsPaymentsNewestFirstOnceEachWhileNewOnesArrive(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let bakery = try await ledger.merchant("Bakery")
            let alice = try await ledger.customer(balance: 100_000)
            let bob = try await ledger.customer(balance: 100_000)
            func paid(by customer: RunningLedger.Party, amount: UInt64) async throws -> PaymentRequest {
                let request = try ledger.request(by: cafe, amount: amount)
                _ = try await cafe.client.createPayment(request)
                _ = try await cafe.client.accept(try ledger.acceptance(of: request, by: customer), request: nil)
                return request
            }
            let expiring = try ledger.request(by: cafe, amount: 500, expiresIn: 5_000)
            _ = try await cafe.client.createPayment(expiring)
            let first = try await paid(by: alice, amount: 100)
            let second = try await paid(by: alice, amount: 200)
            let bobs = try await paid(by: bob, amount: 300)
            let cancelled = try ledger.request(by: cafe, amount: 400)
            _ = try await cafe.client.createPayment(cancelled)
            _ = try await cafe.client.cancelPayment(cancelled.paymentID)
            let open = try ledger.request(by: cafe, amount: 600)
            _ = try await cafe.client.createPayment(open)
            // Created online, then paid from Alice's voucher: listed once, as settled offline.
            let voucher = try await TestVoucher(ledger, alice, limit: 3_000)
            let offline = try voucher.pay(try ledger.request(by: cafe, amount: 700), sequence: 1, spentBefore: 0)
            _ = try await cafe.client.createPayment(offline.0)
            #expect(try await cafe.client.settle([offline], operation: "batch-1").results.map(\.result) == [.settled])
            var expired = try await cafe.client.payment(expiring.paymentID, waitingWhile: .authorizationRequired)
            if expired.status == .authorizationRequired {
                expired = try await cafe.client.payment(expiring.paymentID, waitingWhile: .authorizationRequired)
            }
            #expect(expired.status == .failed)

            let made = [expiring, first, second, bobs, cancelled, open, offline.0]
            let all = try await cafe.client.payments(limit: 200)
            #expect(all.nextCursor == nil && all.data.count == made.count)
            #expect(all.data.map(Self.time) == all.data.map(Self.time).sorted(by: >))
            // Each as `GET /v1/payments/{id}` answers it.
            for request in made { #expect(all.data.contains(try await cafe.client.payment(request.paymentID))) }
            let settled = try #require(all.data.first { $0.id == offline.0.paymentID.description })
            #expect(settled.status == .settled && settled.receipt != nil && settled.history.map(\.status) == [.executed, .settled])

            // Three at a time, a payment made after the first page: each of the seven exactly once, in order.
            var late: PaymentRequest?
            let paged = try await Self.pages(limit: 3, between: { late = try await paid(by: bob, amount: 800) }) { cursor in
                try await cafe.client.payments(limit: 3, cursor: cursor)
            }
            #expect(paged == all.data)
            let late2 = try #require(late)
            #expect(try await cafe.client.payments(limit: 1).data.map(\.id) == [late2.paymentID.description])

            // Status and time filters.
            #expect(try await cafe.client.payments(status: .cancelled).data.map(\.id) == [cancelled.paymentID.description])
            #expect(try await cafe.client.payments(status: .failed).data.map(\.id) == [expiring.paymentID.description])
            #expect(try await cafe.client.payments(status: .settled).data.contains(settled))
            let now = try await cafe.client.payments(limit: 200).data
            let middle = Self.time(now[now.count / 2])
            let before = try await cafe.client.payments(to: middle, limit: 200).data
            let since = try await cafe.client.payments(from: middle, limit: 200).data
            #expect(before.allSatisfy { Self.time($0) < middle } && since.allSatisfy { Self.time($0) >= middle })
            #expect(since + before == now)
            #expect(try await cafe.client.payments(from: middle, to: middle).data.isEmpty)

            // A customer sees what it paid, online and offline; another merchant sees none of these.
            let alices = try await alice.client.payments().data.map(\.id)
            #expect(alices == now.filter { [first, second, offline.0].map(\.paymentID.description).contains($0.id) }.map(\.id))
            let bobsSeen = try await bob.client.payments().data.map(\.id)
            #expect(bobsSeen == [late2, bobs].map(\.paymentID.description))
            #expect(try await bakery.client.payments().data.isEmpty)

            // The operator names the merchant or the paying account.
            let byMerchant = try await ledger.admin.get("/v1/payments?merchant=\(cafe.account.id)&limit=200", as: PaymentPage.self)
            #expect(byMerchant.data == now)
            let byAccount = try await ledger.admin.get("/v1/payments?account=\(alice.account.id)", as: PaymentPage.self)
            #expect(byAccount.data.map(\.id) == alices)
            let paging = try await Self.pages(limit: 2) { cursor in
                try await ledger.admin.get("/v1/payments?merchant=\(cafe.account.id)&limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                    as: PaymentPage.self)
            }
            #expect(paging == now)
        }
    }

    @Test(arguments: StorageKind.allCases)
    func badQueriesAreRefusedWithTheFieldTheyName(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 0)
            func refusal(_ client: LedgerClient, _ query: String) async -> (Int, String?, String?) {
                do {
                    _ = try await client.get("/v1/payments?" + query, as: PaymentPage.self)
                    return (200, nil, nil)
                } catch {
                    guard case .refused(let status, let detail) = error else { return (0, nil, nil) }
                    return (status, detail.fields?.first?.path, detail.fields?.first?.code)
                }
            }
            let forged = Array("0:\(cafe.account.id):nothex".utf8).hex
            for (client, query, path, code) in [
                (cafe.client, "limit=0", "limit", "out-of-range"), (cafe.client, "limit=201", "limit", "out-of-range"),
                (cafe.client, "limit=ten", "limit", "wrong-type"), (alice.client, "cursor=zz", "cursor", "invalid-cursor"),
                (alice.client, "cursor=\(forged)", "cursor", "invalid-cursor"), (cafe.client, "status=paid", "status", "invalid-value"),
                (cafe.client, "from=-1", "from", "wrong-type"), (cafe.client, "to=1.5", "to", "wrong-type"),
                (cafe.client, "merchant=\(cafe.account.id)", "merchant", "unexpected"),
                (alice.client, "account=\(alice.account.id)", "account", "unexpected"),
                (ledger.admin, "limit=10", "merchant", "missing"),
            ] {
                let (status, field, fieldCode) = await refusal(client, query)
                #expect(status == 400 && field == path && fieldCode == code, "\(query): \(status) \(field ?? "-") \(fieldCode ?? "-")")
            }
            #expect(try await ledger.raw("GET", "/v1/payments?merchant=\(cafe.account.id)").status == 401)
        }
    }
}
