import BlepayBLE
import BlepayPayments
import BlepayProtocol
import Foundation
import Testing

/// Not a timed test: with `BLEPAY_IDLE_BENCH_SECONDS` set, runs each transport and its driver idle over the
/// bluetoothd stand-in for that long and prints this process's wake-ups (context switches of all its threads,
/// the bus connections of the stand-in and of the test included) and CPU per second.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["BLEPAY_IDLE_BENCH_SECONDS"] != nil))
struct IdleBench {
    let seconds = ProcessInfo.processInfo.environment["BLEPAY_IDLE_BENCH_SECONDS"].flatMap(Int.init) ?? 15

    @Test func anIdleBusiness() async throws {
        let business = try await BusinessUnderTest.start()
        defer { business.f.stop(business.run) }
        let driver = BusinessDriver(
            transport: business.transport, ledger: NoLedger(), signer: SigningKey(),
            merchant: .init(id: business.merchant.certificate.merchantID, name: "Shop"), clock: wallClock)
        let running = Task { await driver.run() }
        defer { running.cancel() }
        try await measure("business")
    }

    @Test func anIdleCustomer() async throws {
        let customer = try await CustomerUnderTest.start()
        defer { customer.f.stop(customer.run) }
        let driver = CustomerDriver(transport: customer.transport, signer: SigningKey(), clock: wallClock)
        let running = Task { await driver.run() }
        defer { running.cancel() }
        try await measure("customer")
    }

    private func measure(_ what: String) async throws {
        try await Task.sleep(for: .seconds(2))
        let (switches, cpu) = (Self.contextSwitches(), Self.cpuTicks())
        try await Task.sleep(for: .seconds(seconds))
        // Per thread, so that a thread ending meanwhile takes nothing away; one started meanwhile counts in full.
        let woken = Self.contextSwitches().reduce(0) { sum, thread in sum + thread.value - (switches[thread.key] ?? 0) }
        let percent = Double(Self.cpuTicks() - cpu) / Double(sysconf(Int32(_SC_CLK_TCK))) / Double(seconds) * 100
        print("idle bench: \(what) \(String(format: "%.2f", Double(woken) / Double(seconds))) wake-ups/s, \(String(format: "%.2f", percent)) % CPU over \(seconds) s")
    }

    /// Voluntary and involuntary context switches of each thread of this process, by thread id.
    private static func contextSwitches() -> [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Dictionary(uniqueKeysWithValues: tasks.map { task in
            let status = (try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)) ?? ""
            return (task, status.split(separator: "\n").reduce(0) { count, line in
                guard line.hasPrefix("voluntary_ctxt_switches") || line.hasPrefix("nonvoluntary_ctxt_switches") else { return count }
                return count + (line.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0)
            })
        })
    }

    /// utime + stime of this process, in clock ticks.
    private static func cpuTicks() -> Int {
        let stat = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
    }
}

/// A ledger an idle business never calls.
private struct NoLedger: PaymentLedger {
    func execute(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> LedgerOutcome { .unknown(nil) }
    func status(of paymentID: PaymentID, merchant: String?) async -> LedgerOutcome { .unknown(nil) }
    func cancel(_ paymentID: PaymentID) async {}
}
