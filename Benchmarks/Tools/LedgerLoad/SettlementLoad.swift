import AsyncHTTPClient
import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import Logging

/// Offline payments settled as a business uploads them: `POST /v1/settlements` in batches, each item a signed
/// request and an acceptance under the customer's voucher, every item answered `settled`. Vouchers are issued and
/// every message is signed before the clock starts, so the number is the ledger's (and HTTP's).
struct SettlementLoad {
    let url: String
    let adminToken: String
    let count: Int
    let batch: Int
    let concurrency: Int
    let customers: Int
    let label: String

    static let amount: UInt64 = 1_250

    func run() async throws {
        try await withLoadClient(concurrency: concurrency, readSeconds: 120) { http, logger in
            try await measure(http: http, logger: logger)
        }
    }

    private func measure(http: HTTPClient, logger: Logger) async throws {
        @Sendable func client(_ credentials: LedgerClient.Credentials) -> LedgerClient {
            LedgerClient(baseURL: url, credentials: credentials, keys: nil, retry: .init(attempts: 1), http: http, logger: logger)
        }
        let enrollment = Enrollment(admin: client(.bearer(adminToken))) { [client($0)] }
        let shop = try await enrollment.merchant("Bench Shop")
        let people = try await enrollment.parties(customers) { index in try await enrollment.customer("Bench Customer \(index)") }

        // Each customer's voucher covers its share of the payments; payment i is customer i mod the customers' next use.
        let uses = count / customers + 1
        let vouchers = try await people.asyncMap { person in
            let issued = try await person.clients[0].createPreAuthorization(
                CreatePreAuthorization(
                    instrumentId: person.instrument!, amount: Int64(Self.amount) * Int64(uses), currency: "EUR",
                    lifetimeSeconds: 3600))
            guard let bytes = Data(base64Encoded: issued.voucher) else { throw LoadError("voucher \(issued.id) is not base64") }
            return try PreAuthorizationVoucher(encoded: Array(bytes))
        }
        let now = Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
        let pairs = try (0..<count).map { index throws -> (PaymentRequest, PaymentAcceptance) in
            let person = people[index % customers]
            let use = UInt32(index / customers)
            let request = try PaymentRequest(
                paymentID: PaymentID(bytes: (0..<16).map { _ in UInt8.random(in: .min ... .max) }),
                amount: Money(minorUnits: Self.amount, currency: Currency("EUR")), reference: "bench-\(index)",
                merchantID: shop.account.id, merchantName: shop.account.name, createdAt: now,
                expiresAt: now.adding(milliseconds: 600_000), businessOnline: false, signature: .unsigned
            ).signed(by: shop.key)
            let acceptance = try PaymentAcceptance(
                paymentID: request.paymentID, amount: request.amount, tipMinorUnits: 0, instrumentID: person.instrument!,
                delegatedInstrument: false, createdAt: now, requestHash: request.hash,
                sessionHash: Hash32(Array(repeating: 5, count: 32)), customerKey: person.key.publicKey,
                preAuthorization: try PreAuthorizationPresentation(
                    voucher: vouchers[index % customers], sequence: use + 1, spentBeforeMinorUnits: UInt64(use) * Self.amount),
                signature: .unsigned
            ).signed(by: person.key)
            return (request, acceptance)
        }
        let batches = stride(from: 0, to: pairs.count, by: batch).map { Array(pairs[$0..<min($0 + batch, pairs.count)]) }

        let next = Counter(0)
        let clock = ContinuousClock()
        let start = clock.now
        let refused = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var refused = 0
                    while true {
                        let index = next.take()
                        guard index < batches.count else { return refused }
                        let answer = try await shop.clients[0].settle(batches[index], operation: "bench-batch-\(index)")
                        refused += answer.results.filter { $0.result != .settled }.count
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = (clock.now - start).seconds
        print("bench: \(label) settlements " + String(format: "%.0f items/s", Double(count) / elapsed)
            + " (\(count) offline payments in batches of \(batch), concurrency \(concurrency), \(customers) customers' vouchers, \(refused) refused)")
        guard refused == 0 else { throw LoadError("\(refused) of \(count) settlement items were refused") }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
