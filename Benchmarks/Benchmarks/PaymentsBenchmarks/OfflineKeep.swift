import Benchmark
import BlepayDaemonStore
import BlepayPayments
import BlepayProtocol
import Foundation

/// What a business does with a both-offline acceptance before it answers, without the radio: the machine checks it
/// (the acceptance's signature, the voucher's, the deny list's, the range it claims), the merchant key signs the
/// pending acknowledgement, and the settlement queue keeps the pair in a real SQLite file (WAL, synchronous FULL)
/// under the merchant's limits. One iteration is one payment; the goal is at most 20 ms at p99.
func offlineAcceptKeep() {
    Benchmark(
        "offline-accept-keep",
        configuration: .init(
            metrics: [.wallClock], scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 400)
    ) { benchmark in
        var shop = try OfflineShop(payments: benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            try shop.accept(i)
        }
        benchmark.stopMeasurement()
        try shop.close()
    }
}

/// A business offline with one customer connected, `payments` open requests and, for each, the customer's acceptance
/// under one voucher (uses 1, 2, … of 1.00 each), signed ahead so that only the business's work is measured.
struct OfflineShop {
    static let now = Timestamp(millisecondsSince1970: 1_795_000_000_000)
    let peer = PeerID(1)
    let merchantKey = SigningKey()
    let directory: URL
    let queue: SettlementQueue
    var machine: BusinessMachine
    let pairs: [(PaymentRequest, PaymentAcceptance)]

    init(payments: Int) throws {
        let (ledgerKey, customerKey) = (SigningKey(), SigningKey())
        let keyID = TrustedLedgerKeys.keyID(of: ledgerKey.publicKey)
        let eur = try Currency("EUR")
        let certificate = try MerchantCertificate(
            merchantID: "m_bench", merchantName: "Bench", signingKey: merchantKey.publicKey,
            noiseKey: SigningKey().publicKey, validFrom: Self.now, validUntil: Self.now.adding(milliseconds: 3_600_000),
            ledgerKeyID: keyID, signature: .unsigned
        ).signed(by: ledgerKey)
        let session = PeerSession(
            version: 1, sessionHash: try Hash32((0..<32).map { _ in .random(in: 0...255) }), capabilities: [.online],
            certificate: certificate)
        let voucher = try PreAuthorizationVoucher(
            voucherID: FixedBytes((0..<8).map { _ in .random(in: 0...255) }), instrumentID: "card-1",
            customerKey: customerKey.publicKey, limit: Money(minorUnits: UInt64(payments) * 100, currency: eur),
            issuedAt: Self.now, expiresAt: Self.now.adding(milliseconds: 3_600_000),
            ledgerKeyID: keyID, signature: .unsigned
        ).signed(by: ledgerKey)
        let trusted = TrustedLedgerKeys([ledgerKey.publicKey])
        machine = BusinessMachine(
            offline: OfflinePolicy(trusted: trusted, currency: eur, maximumPaymentMinorUnits: 10_000))
        machine.denyListReceived(try DenyList(
            issuedAt: Self.now, voidedVouchers: [], blockedKeys: [], ledgerKeyID: keyID, signature: .unsigned
        ).signed(by: ledgerKey))
        _ = machine.connected(peer, session, at: Self.now)
        var pairs: [(PaymentRequest, PaymentAcceptance)] = []
        for use in 0..<payments {
            let request = try PaymentRequest(
                paymentID: .random(), amount: Money(minorUnits: 100, currency: eur), reference: nil,
                merchantID: certificate.merchantID, merchantName: certificate.merchantName, createdAt: Self.now,
                expiresAt: Self.now.adding(milliseconds: 120_000), businessOnline: false, signature: .unsigned
            ).signed(by: merchantKey)
            _ = try machine.request(request, at: Self.now)
            let acceptance = try customerKey.acceptance(
                of: request,
                terms: AcceptanceTerms(tipMinorUnits: 0, instrumentID: "card-1", delegatedInstrument: false, acceptedAt: Self.now),
                session: session,
                presenting: PreAuthorizationPresentation(voucher: voucher, sequence: UInt32(use + 1), spentBeforeMinorUnits: UInt64(use) * 100))
            pairs.append((request, acceptance))
        }
        self.pairs = pairs
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        queue = SettlementQueue(store: try DaemonStore(path: directory.appendingPathComponent("business.sqlite").path))
    }

    /// Payment `i` from its acceptance to the answer the winner is sent.
    mutating func accept(_ i: Int) throws {
        let (request, acceptance) = pairs[i]
        let id = request.paymentID
        guard machine.receive(.paymentAcceptance(acceptance), from: peer, at: Self.now).contains(.queue(request, acceptance)) else {
            throw OfflineKeepFailed(step: "the acceptance was not taken")
        }
        let receipt = try merchantKey.acknowledge(request, acceptance, at: Self.now)
        try queue.enqueue(request, acceptance, at: Self.now, limits: .unlimited)
        let answer = machine.ledgerAnswered(id, .executed(receipt), at: Self.now)
        guard answer.contains(.send(peer, .paymentResult(try PaymentResult(paymentID: id, outcome: .finished(receipt))))) else {
            throw OfflineKeepFailed(step: "the winner was not sent its pending receipt")
        }
    }

    func close() throws { try FileManager.default.removeItem(at: directory) }
}

struct OfflineKeepFailed: Error {
    let step: String
}
