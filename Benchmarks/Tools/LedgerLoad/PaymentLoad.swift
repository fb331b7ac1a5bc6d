import AsyncHTTPClient
import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import Foundation
import Logging
import Synchronization

/// One complete payment is the business's `POST /v1/payments` and then the customer's
/// `POST /v1/payments/{id}/acceptance` with the request along, as the daemons send it, which authorizes, executes
/// and settles it; only an answer `settled`
/// counts, anything else is an error. The signed messages are made before the clock starts, so the numbers are the
/// ledger's (and HTTP's), not the signing's.
///
/// The load runs against one or more ledger processes, split round-robin by payment.
struct PaymentLoad {
    let urls: [String]
    let adminToken: String
    let count: Int
    let warmUp: Int
    let concurrency: Int
    let customers: Int
    let merchants: Int
    let label: String
    let serverPIDs: [Int32]

    /// One payment's signed messages and where they go.
    struct Job: Sendable {
        let request: PaymentRequest
        let acceptance: PaymentAcceptance
        let merchant: LedgerClient
        let customer: LedgerClient
    }

    struct Outcome: Sendable {
        var durations: [Double] = []
        var createDurations: [Double] = []
        var errors = 0
        var firstErrors: [String] = []

        mutating func fail(_ message: String) {
            errors += 1
            if firstErrors.count < 5 { firstErrors.append(message) }
        }

        mutating func merge(_ other: Outcome) {
            durations += other.durations
            createDurations += other.createDurations
            errors += other.errors
            firstErrors += other.firstErrors.prefix(max(0, 5 - firstErrors.count))
        }
    }

    func run() async throws {
        try await withLoadClient(concurrency: concurrency, readSeconds: 60) { http, logger in
            try await measure(http: http, logger: logger)
        }
    }

    private func measure(http: HTTPClient, logger: Logger) async throws {
        @Sendable func client(_ url: String, _ credentials: LedgerClient.Credentials) -> LedgerClient {
            LedgerClient(baseURL: url, credentials: credentials, keys: nil, retry: .init(attempts: 1), http: http, logger: logger)
        }
        let enrollment = Enrollment(admin: client(urls[0], .bearer(adminToken))) { credentials in
            urls.map { client($0, credentials) }
        }
        async let merchantParties = enrollment.parties(merchants) { index in try await enrollment.merchant("Bench Shop \(index)") }
        async let customerParties = enrollment.parties(customers) { index in try await enrollment.customer("Bench Customer \(index)") }
        let (shops, people) = try await (merchantParties, customerParties)

        // Every message is signed before the clock starts; payment i goes to ledger process i mod the processes,
        // made by merchant i mod the merchants and paid by customer i mod the customers.
        let now = Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
        let jobs = try (0..<(warmUp + count)).map { index throws -> Job in
            let merchant = shops[index % shops.count]
            let customer = people[index % people.count]
            let request = try PaymentRequest(
                paymentID: PaymentID(bytes: (0..<16).map { _ in UInt8.random(in: .min ... .max) }),
                amount: Money(minorUnits: 1_250, currency: Currency("EUR")), reference: "bench-\(index)",
                merchantID: merchant.account.id, merchantName: merchant.account.name, createdAt: now,
                expiresAt: now.adding(milliseconds: 600_000), businessOnline: true, signature: .unsigned
            ).signed(by: merchant.key)
            let acceptance = try PaymentAcceptance(
                paymentID: request.paymentID, amount: request.amount, tipMinorUnits: 0, instrumentID: customer.instrument!,
                delegatedInstrument: false, createdAt: now, requestHash: request.hash,
                sessionHash: Hash32(Array(repeating: 5, count: 32)), customerKey: customer.key.publicKey,
                preAuthorization: nil, signature: .unsigned
            ).signed(by: customer.key)
            let process = index % urls.count
            return Job(request: request, acceptance: acceptance, merchant: merchant.clients[process],
                customer: customer.clients[process])
        }

        let warm = await drive(jobs[..<warmUp], concurrency: concurrency)
        guard warm.errors == 0 else {
            throw LoadError("\(warm.errors) of \(warmUp) warm-up payments failed: \(warm.firstErrors.joined(separator: "; "))")
        }
        let cpuBefore = serverPIDs.map(Self.cpuSeconds)
        let writtenBefore = serverPIDs.map(Self.writtenBytes)
        let loadBefore = Self.cpuSeconds(getpid())
        let clock = ContinuousClock()
        let start = clock.now
        let outcome = await drive(jobs[warmUp...], concurrency: concurrency)
        let elapsed = (clock.now - start).seconds
        let serverCPU = zip(serverPIDs.map(Self.cpuSeconds), cpuBefore).map { after, before in (after ?? 0) - (before ?? 0) }
            .reduce(0, +) / elapsed
        let loadCPU = ((Self.cpuSeconds(getpid()) ?? 0) - (loadBefore ?? 0)) / elapsed
        let written = zip(serverPIDs.map(Self.writtenBytes), writtenBefore).map { after, before in (after ?? 0) - (before ?? 0) }
            .reduce(0, +)

        let sorted = outcome.durations.sorted()
        let creates = outcome.createDurations.sorted()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int((Double(values.count) * p).rounded(.up)) - 1)] * 1000
        }
        var detail = "concurrency \(concurrency), \(count) payments, \(outcome.errors) errors; "
        detail += "\(urls.count) process\(urls.count == 1 ? "" : "es"), \(merchants) merchant\(merchants == 1 ? "" : "s"), "
        detail += "\(customers) customers, messages signed ahead"
        if !serverPIDs.isEmpty {
            detail += String(format: "; ledger CPU %.2f cores (%.2f ms a payment), load CPU %.2f cores", serverCPU,
                serverCPU * elapsed / Double(max(sorted.count, 1)) * 1000, loadCPU)
            // What the ledger itself sent to the disk (on SQLite: the WAL and its checkpoints).
            detail += String(format: ", ledger wrote %.0f KB a payment", written / Double(max(sorted.count, 1)) / 1000)
        }
        print("bench: \(label) payments " + String(format: "%.0f/s p50 %.1f ms p99 %.1f ms",
            Double(sorted.count) / elapsed, percentile(sorted, 0.5), percentile(sorted, 0.99)) + " (\(detail))")
        FileHandle.standardError.write(Data(("\(label): " + String(format: "create p50 %.1f ms p99 %.1f ms; timed phase %.1f s\n",
            percentile(creates, 0.5), percentile(creates, 0.99), elapsed)).utf8))
        guard outcome.errors == 0 else {
            throw LoadError("\(outcome.errors) of \(count) payments failed: \(outcome.firstErrors.joined(separator: "; "))")
        }
    }

    /// Runs `jobs` on `concurrency` workers, each taking the next payment as soon as its last one settled.
    private func drive(_ jobs: ArraySlice<Job>, concurrency: Int) async -> Outcome {
        let next = Counter(jobs.startIndex)
        return await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var outcome = Outcome()
                    outcome.durations.reserveCapacity(jobs.count / concurrency + 1)
                    let clock = ContinuousClock()
                    while true {
                        let index = next.take()
                        guard index < jobs.endIndex else { break }
                        let job = jobs[index]
                        let start = clock.now
                        do {
                            let created = try await job.merchant.createPayment(job.request)
                            guard created.status == .authorizationRequired else {
                                outcome.fail("payment \(created.id) created as \(created.status.rawValue)")
                                continue
                            }
                            let createdAt = clock.now
                            let paid = try await job.customer.accept(job.acceptance, request: job.request)
                            guard paid.status == .settled else {
                                outcome.fail("payment \(paid.id) is \(paid.status.rawValue) (\(paid.failureReason ?? "no reason"))")
                                continue
                            }
                            outcome.createDurations.append((createdAt - start).seconds)
                            outcome.durations.append((clock.now - start).seconds)
                        } catch {
                            outcome.fail("\(error)")
                        }
                    }
                    return outcome
                }
            }
            var all = Outcome()
            for await outcome in group { all.merge(outcome) }
            return all
        }
    }

    /// The bytes process `pid` caused to be written to storage, from /proc (nil where it cannot be read).
    static func writtenBytes(_ pid: Int32) -> Double? {
        guard let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
            let line = io.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") })
        else { return nil }
        return Double(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
    }

    /// The user and system CPU time process `pid` has used, from /proc (nil where there is none).
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// The next payment to run, shared by the workers.
final class Counter: Sendable {
    private let value: Atomic<Int>

    init(_ first: Int) { value = Atomic(first) }

    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}
