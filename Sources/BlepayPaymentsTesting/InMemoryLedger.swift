import BlepayPayments
import BlepayProtocol
import Synchronization

/// A ledger in memory for the unit-test tier: executes each payment id at most once (a repeated `execute` answers
/// with the first outcome), and can be told how to answer, including with a lost answer.
public final class InMemoryLedger: PaymentLedger {
    /// How to answer an execution: the default executes it.
    public enum Behaviour: Sendable {
        case execute
        case refuse(PaymentErrorCode)
        /// Executes it but the answer is lost: the caller sees `unknown` and must look it up.
        case executeAndLoseAnswer
    }

    private let state = Mutex<(executed: [PaymentID: Receipt], cancelled: Set<PaymentID>, executions: Int)>(([:], [], 0))
    private let behaviour: @Sendable (PaymentAcceptance) -> Behaviour
    private let latency: Duration
    /// Signs the receipts, as the ledger's key does.
    public let ledgerKey = SigningKey()

    /// `latency`: how long each execution and withdrawal takes, as a remote ledger's round trip would.
    public init(latency: Duration = .zero, behaviour: @escaping @Sendable (PaymentAcceptance) -> Behaviour = { _ in .execute }) {
        self.latency = latency
        self.behaviour = behaviour
    }

    /// Times `execute` was called, and the payments executed: the tests' view of money moved.
    public var executionCount: Int { state.withLock { $0.executions } }
    public var executed: [PaymentID: Receipt] { state.withLock { $0.executed } }
    public var cancelled: Set<PaymentID> { state.withLock { $0.cancelled } }

    public func execute(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> LedgerOutcome {
        if latency > .zero { try? await Task.sleep(for: latency) }
        let id = request.paymentID
        let behaviour = behaviour(acceptance)
        return state.withLock { state in
            state.executions += 1
            if let receipt = state.executed[id] { return .executed(receipt) }
            guard !state.cancelled.contains(id) else { return .notExecuted(PaymentError(.notFound, "cancelled")) }
            switch behaviour {
            case .refuse(let code): return .notExecuted(PaymentError(code))
            case .execute, .executeAndLoseAnswer:
                guard let receipt = try? Receipt.settled(
                    request, acceptance, transactionID: "tx-\(state.executed.count + 1)", at: acceptance.createdAt,
                    signedBy: ledgerKey)
                else { return .notExecuted(PaymentError(.ledgerError, "no receipt")) }
                state.executed[id] = receipt
                if case .executeAndLoseAnswer = behaviour { return .unknown("the answer was lost") }
                return .executed(receipt)
            }
        }
    }

    public func status(of paymentID: PaymentID, merchant: String?) async -> LedgerOutcome {
        state.withLock { state in
            state.executed[paymentID].map { .executed($0) } ?? .notExecuted(PaymentError(.notFound))
        }
    }

    /// Takes `latency` too; a call cancelled on its way (its task cancelled) never arrives.
    public func cancel(_ paymentID: PaymentID) async {
        if latency > .zero { try? await Task.sleep(for: latency) }
        guard !Task.isCancelled else { return }
        _ = state.withLock { $0.cancelled.insert(paymentID) }
    }
}
