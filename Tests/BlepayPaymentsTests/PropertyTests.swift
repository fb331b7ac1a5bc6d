import BlepayPayments
import BlepayProtocol
import TestSupport
import Testing

/// Random interleavings of connect, disconnect, accept, cancel, time, lost and repeated messages, and ledger
/// outcomes with 1 to 20 customers;
/// after every scenario the invariants of the payment flow must hold. A failure names its seed.
@Suite struct PropertyTests {
    static let scenarios = 10_000

    @Test func invariantsHoldInRandomScenarios() {
        var finished = 0, refused = 0, unknown = 0, found = 0
        for seed in 0..<UInt64(Self.scenarios) {
            var simulation = Simulation(seed: seed)
            simulation.run(steps: 120)
            let failures = Self.violations(in: simulation, afterStop: false)
            // Then every connection ends, by the customer's `stopBLE` or the link dropping: only `disconnected` may
            // follow, once per connection.
            for peer in simulation.connected.sorted() {
                if peer.rawValue % 2 == 0 { simulation.stop(peer) } else { simulation.disconnect(peer) }
            }
            let afterStop = Self.violations(in: simulation, afterStop: true)
            #expect(failures.isEmpty && afterStop.isEmpty, "seed \(seed): \(failures + afterStop)")
            if !(failures.isEmpty && afterStop.isEmpty) { return }
            found += simulation.customerEvents.values.joined().filter { if case .outcomeFound = $0 { true } else { false } }.count
            for event in simulation.businessEvents {
                switch event {
                case .finished: finished += 1
                case .failed: refused += 1
                case .outcomePending: unknown += 1
                default: break
                }
            }
        }
        // The schedule must actually reach every ledger outcome, or the test proves little.
        #expect(finished > 1_000 && refused > 100 && unknown > 100 && found > 100,
            "finished \(finished), refused \(refused), unknown \(unknown), outcomes found late \(found)")
    }

    /// The terminal event fits how the payment ended: only the winner finishes it (or, having left after
    /// accepting, learns the outcome is unknown); only others hear `otherPaid`, and only of a paid payment; a
    /// paid payment is never reported cancelled by the business.
    static func check(_ event: CustomerEvent, of peer: PeerID, winner: PeerID?) -> [String] {
        switch (event, winner) {
        case (.finishedPayment, let winner): return winner == peer ? [] : ["\(peer): finished a payment it did not win"]
        case (.otherPaid, let winner?): return winner != peer ? [] : ["\(peer): told otherPaid for its own payment"]
        case (.otherPaid, nil): return ["\(peer): told otherPaid for a payment nobody paid"]
        case (.cancelled(_, _, .business), _?): return ["\(peer): a paid payment was cancelled by the business"]
        case (.error(_, _, let error), let winner?) where winner == peer && error.code != .outcomeUnknown:
            return ["\(peer): won, but ended with \(error)"]
        case (.cancelled, let winner?) where winner == peer: return ["\(peer): won, but ended cancelled"]
        default: return []
        }
    }

    static func violations(in s: Simulation, afterStop: Bool) -> [String] {
        var problems: [String] = []
        // No payment executed again while money may have moved; at most one payer per request.
        for id in s.executedAgain { problems.append("\(id) executed again while its outcome was open") }
        var finishedBy: [PaymentID: [PeerID]] = [:]
        var businessMoved: UInt64 = 0
        for case .finished(let id, let peer, let receipt) in s.businessEvents {
            finishedBy[id, default: []].append(peer)
            businessMoved += receipt.amount.minorUnits + receipt.tipMinorUnits
        }
        for (id, peers) in finishedBy where peers.count > 1 { problems.append("\(id) paid by \(peers)") }
        // Money moved at the ledger equals what the business's `finished` events report.
        let ledgerMoved = s.executedInTruth.values.reduce(0) { $0 + $1.amount.minorUnits + $1.tipMinorUnits }
        if ledgerMoved != businessMoved { problems.append("ledger moved \(ledgerMoved), business reports \(businessMoved)") }
        if !s.machineDisconnects.isEmpty { problems.append("machines disconnected \(s.machineDisconnects)") }
        var customerPaid: [PaymentID: Int] = [:]
        for (peer, events) in s.customerEvents {
            var open: Set<PaymentID> = []
            var ended: Set<PaymentID> = []
            var disconnected = false
            for event in events {
                if disconnected { problems.append("\(peer): \(event) after disconnected") }
                switch event {
                case .receivedPayment(_, let request):
                    if !open.insert(request.paymentID).inserted || ended.contains(request.paymentID) {
                        problems.append("\(peer): \(request.paymentID) received twice")
                    }
                case .disconnected: disconnected = true
                case .finishedPayment(_, let receipt):
                    customerPaid[receipt.paymentID, default: 0] += 1
                    if s.executedInTruth[receipt.paymentID] != receipt {
                        problems.append("\(peer): finished \(receipt.paymentID) that the ledger did not execute so")
                    }
                case .outcomeFound(_, let id, let outcome):
                    // Only after the payment ended unknown; a payment found paid counts as finished by this customer.
                    if !ended.contains(id) { problems.append("\(peer): outcome of \(id) found before it ended") }
                    if case .success(let receipt) = outcome {
                        customerPaid[id, default: 0] += 1
                        if s.executedInTruth[id] != receipt { problems.append("\(peer): found \(id) paid, the ledger did not execute so") }
                        if finishedBy[id]?.first != peer { problems.append("\(peer): found \(id) paid, which it did not win") }
                    }
                default: break
                }
                // A request refused for the clocks' difference was never shown: its one event is that error.
                if case .error(_, let id?, let error) = event, error.code == .clockSkew, !open.contains(id) {
                    if !ended.insert(id).inserted { problems.append("\(peer): \(id) refused after it ended") }
                    continue
                }
                if let id = event.terminalPayment {
                    problems += Self.check(event, of: peer, winner: finishedBy[id]?.first)
                    guard open.remove(id) != nil else {
                        problems.append("\(peer): terminal \(event) for a payment not open")
                        continue
                    }
                    ended.insert(id)
                }
            }
            // Once everything settled, every payment a connected customer received has ended exactly once.
            if !open.isEmpty { problems.append("\(peer): \(open.count) payments never ended") }
            if afterStop && !disconnected { problems.append("\(peer): no disconnected") }
        }
        for (id, count) in customerPaid where count > 1 { problems.append("\(id): \(count) customers finished it") }
        return problems
    }
}
