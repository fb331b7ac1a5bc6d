import BlepayPayments
import BlepayProtocol
import TestSupport

/// One business and up to 20 customers joined by in-order links, with a ledger that can execute, refuse or leave
/// the outcome unknown, all driven by a seeded random schedule. It records what the invariants are checked on.
struct Simulation {
    var random: SplitMix64
    var business = BusinessMachine(verifier: Verifier())
    var customers: [PeerID: CustomerMachine] = [:]
    var connected: Set<PeerID> = []
    var toCustomer: [PeerID: [Message]] = [:]
    var toBusiness: [PeerID: [Message]] = [:]
    var now = Fixture.t0
    var requests: [PaymentID: PaymentRequest] = [:]
    /// Executions the ledger has not answered; look-ups under way.
    var executing: [PaymentID: PaymentAcceptance] = [:]
    var lookingUp: Set<PaymentID> = []
    /// What really happened at the ledger for an execution whose answer was lost.
    var executedInTruth: [PaymentID: Receipt] = [:]

    // Records.
    /// Executions asked while an earlier one of the same payment could still have moved money (being executed,
    /// looked up, or executed): each would be a double charge. One after a refusal is the next payer's turn.
    var executedAgain: [PaymentID] = []
    var customerEvents: [PeerID: [CustomerEvent]] = [:]
    var businessEvents: [BusinessEvent] = []
    /// Connections a machine closed by itself: none should, as every peer here follows the protocol.
    var machineDisconnects: [PeerID] = []
    private var stopping = false
    let maximumCustomers: Int

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
        maximumCustomers = Int.random(in: 1...20, using: &random)
    }

    // MARK: Steps

    mutating func connect() {
        guard customers.count < maximumCustomers else { return }
        let peer = PeerID(UInt64(customers.count + 1))
        var customer = CustomerMachine()
        customer.start()
        _ = customer.connected(peer, Fixture.session)
        customers[peer] = customer
        connected.insert(peer)
        apply(business.connected(peer, Fixture.session, at: now))
    }

    mutating func disconnect(_ peer: PeerID) {
        guard connected.remove(peer) != nil else { return }
        toCustomer[peer] = nil
        toBusiness[peer] = nil
        apply(business.disconnected(peer))
        apply(customers[peer]!.disconnected(peer), of: peer)
    }

    mutating func openRequest() {
        let id = PaymentID.random(using: &random)
        let request = try! PaymentRequest(
            paymentID: id, amount: Fixture.money(UInt64.random(in: 1...50_000, using: &random)), reference: nil,
            merchantID: "m_1", merchantName: "Shop", createdAt: now,
            expiresAt: now.adding(milliseconds: UInt64.random(in: 5_000...120_000, using: &random)),
            businessOnline: true, signature: Fixture.signature)
        requests[id] = request
        apply((try? business.request(request, at: now)) ?? [])
    }

    mutating func businessCancels() {
        guard let id = requests.keys.randomElement(using: &random) else { return }
        apply((try? business.cancel(id)) ?? [])
    }

    mutating func customerActs(_ peer: PeerID) {
        guard connected.contains(peer) else { return }
        let shown = openPayments(of: peer)
        guard let request = shown.randomElement(using: &random) else { return }
        let roll = Int.random(in: 0..<10, using: &random)
        if roll < 2 {
            apply((try? customers[peer]!.cancel(request.paymentID)) ?? [], of: peer)
        } else {
            let wrong = roll == 2 ? Fixture.money(request.amount.minorUnits + 1) : request.amount
            let terms = AcceptanceTerms(
                tipMinorUnits: UInt64.random(in: 0...500, using: &random), instrumentID: roll == 3 ? "forged-1" : "card-1",
                delegatedInstrument: false, acceptedAt: now)
            apply((try? customers[peer]!.accept(request.paymentID, amount: wrong, terms: terms)) ?? [], of: peer)
        }
    }

    mutating func deliver() {
        let links = toCustomer.filter { !$0.value.isEmpty }.map { ($0.key, true) }
            + toBusiness.filter { !$0.value.isEmpty }.map { ($0.key, false) }
        guard let (peer, downstream) = links.randomElement(using: &random) else { return }
        // Now and then a message arrives twice, as a retried write can, or is lost with the link still up.
        let roll = Int.random(in: 0..<100, using: &random)
        let duplicate = roll < 5
        if roll >= 97 {
            if downstream { toCustomer[peer]!.removeFirst() } else { toBusiness[peer]!.removeFirst() }
            return
        }
        if downstream {
            let message = duplicate ? toCustomer[peer]!.first! : toCustomer[peer]!.removeFirst()
            apply(customers[peer]!.receive(message, from: peer, at: now), of: peer)
        } else {
            let message = duplicate ? toBusiness[peer]!.first! : toBusiness[peer]!.removeFirst()
            apply(business.receive(message, from: peer, at: now))
        }
    }

    /// The ledger answers one execution or look-up, truthfully or (for executions) with a lost answer.
    mutating func ledgerAnswers(definitively: Bool = false) {
        if let (id, acceptance) = executing.randomElement(using: &random) {
            executing[id] = nil
            let receipt = Fixture.receipt(for: acceptance)
            switch definitively ? 0 : Int.random(in: 0..<4, using: &random) {
            case 0: executedInTruth[id] = receipt; apply(business.ledgerAnswered(id, .executed(receipt), at: now))
            case 1: apply(business.ledgerAnswered(id, .notExecuted(PaymentError(.insufficientFunds)), at: now))
            default:
                if Bool.random(using: &random) { executedInTruth[id] = receipt }
                apply(business.ledgerAnswered(id, .unknown("timeout"), at: now))
            }
        } else if let id = lookingUp.randomElement(using: &random) {
            lookingUp.remove(id)
            if !definitively && Bool.random(using: &random) {
                apply(business.ledgerAnswered(id, .unknown("still unreachable"), at: now))
            } else if let receipt = executedInTruth[id] {
                apply(business.ledgerAnswered(id, .executed(receipt), at: now))
            } else {
                apply(business.ledgerAnswered(id, .notExecuted(PaymentError(.ledgerError)), at: now))
            }
        }
    }

    /// The customer ends its registration (`stopBLE`).
    mutating func stop(_ peer: PeerID) {
        guard connected.contains(peer) else { return }
        stopping = true
        apply(customers[peer]!.stop(), of: peer)
        stopping = false
    }

    mutating func advance(_ milliseconds: UInt64) {
        now = now.adding(milliseconds: milliseconds)
        apply(business.tick(at: now))
        for peer in connected.sorted() { apply(customers[peer]!.tick(at: now), of: peer) }
    }

    /// Runs a random schedule, then lets everything in flight settle and time pass every expiry.
    mutating func run(steps: Int) {
        connect()
        openRequest()
        for _ in 0..<steps {
            let peer = PeerID(UInt64.random(in: 1...UInt64(maximumCustomers), using: &random))
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<10: connect()
            case 10..<14: disconnect(peer)
            case 14..<18: openRequest()
            case 18..<20: businessCancels()
            case 20..<40: customerActs(peer)
            case 40..<80: deliver()
            case 80..<90: ledgerAnswers()
            default: advance(UInt64.random(in: 0...30_000, using: &random))
            }
        }
        settle()
    }

    mutating func settle() {
        for _ in 0..<10_000 {
            if toCustomer.values.contains(where: { !$0.isEmpty }) || toBusiness.values.contains(where: { !$0.isEmpty }) {
                deliver()
            } else if !executing.isEmpty || !lookingUp.isEmpty {
                ledgerAnswers(definitively: true)
            } else if requests.values.contains(where: {
                // A customer counts a request's lifetime from its arrival, which may come up to the clock tolerance
                // after the business's expiry (a request held up that long is taken for a clock behind).
                $0.expiresAt.adding(milliseconds: $0.expiresAt.millisecondsSince1970 - $0.createdAt.millisecondsSince1970
                    + CustomerMachine.clockToleranceMilliseconds + CustomerMachine.answerGraceMilliseconds) > now
            }) {
                advance(60_000)
            } else {
                return
            }
        }
    }

    // MARK: Plumbing

    func openPayments(of peer: PeerID) -> [PaymentRequest] {
        var open: [PaymentID: PaymentRequest] = [:]
        for event in customerEvents[peer] ?? [] {
            if case .receivedPayment(_, let request) = event { open[request.paymentID] = request }
            if let ended = event.terminalPayment { open[ended] = nil }
        }
        return open.values.sorted { $0.paymentID.bytes.lexicographicallyPrecedes($1.paymentID.bytes) }
    }

    mutating func apply(_ actions: [BusinessAction]) {
        for action in actions {
            switch action {
            case .emit(let event): businessEvents.append(event)
            case .send(let peer, let message): if connected.contains(peer) { toCustomer[peer, default: []].append(message) }
            case .execute(_, let acceptance):
                let id = acceptance.paymentID
                if executing[id] != nil || lookingUp.contains(id) || executedInTruth[id] != nil { executedAgain.append(id) }
                executing[acceptance.paymentID] = acceptance
            case .lookUpStatus(let id): lookingUp.insert(id)
            // Every request here is online: one kept for offline settlement would be paid a second way.
            case .queue(_, let acceptance): executedAgain.append(acceptance.paymentID)
            // Nothing is kept offline here, so nothing is read back: asking would be a machine fault.
            case .recall(let query, _): executedAgain.append(query.paymentID)
            }
        }
    }

    mutating func apply(_ actions: [CustomerAction], of peer: PeerID) {
        for action in actions {
            switch action {
            case .emit(let event): customerEvents[peer, default: []].append(event)
            case .send(_, let message): if connected.contains(peer) { toBusiness[peer, default: []].append(message) }
            case .sendAcceptance(_, let request, let terms, _):
                let acceptance = Fixture.acceptance(of: request, tip: terms.tipMinorUnits, instrument: terms.instrumentID)
                apply(customers[peer]!.acceptanceSigned(acceptance), of: peer)
            case .disconnect:
                if !stopping { machineDisconnects.append(peer) }
                disconnect(peer)
            case .stopAdvertising: break
            // Every request here is online: a customer executing one would pay it a second way.
            case .execute(let request, _), .keepForSettlement(let request, _): executedAgain.append(request.paymentID)
            case .lookUpStatus: break
            }
        }
    }
}

extension PaymentID {
    static func random(using generator: inout SplitMix64) -> PaymentID {
        try! PaymentID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
