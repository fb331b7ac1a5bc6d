import BlepayProtocol

public struct AccountID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public static func < (lhs: AccountID, rhs: AccountID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// Double-entry books: every transfer debits one account and credits another by the same amount, so the balances
/// of each currency always sum to zero. Customer and merchant accounts never go below zero, counting what their
/// pending holds reserve; only external accounts (where money enters and leaves) may. Holds are two-phase: pending,
/// then posted (in full or in part), voided, or expired. Ids make every operation idempotent.
public struct Journal: Sendable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case customer, merchant
        /// Funds set aside for one purpose (a pre-authorization's reserve) until paid out or returned.
        case escrow
        /// Money's way in and out (card networks, bank transfers): may be negative.
        case external
    }

    public struct Transfer: Sendable, Hashable, Codable {
        public let id: String
        public let debit: AccountID
        public let credit: AccountID
        public let amount: UInt64
        public let currency: String
    }

    public struct Hold: Sendable, Hashable, Codable {
        public enum State: String, Sendable, Hashable, Codable { case pending, posted, voided, expired }
        public let id: String
        public let debit: AccountID
        public let credit: AccountID
        public let amount: UInt64
        public let currency: String
        /// Milliseconds since 1970.
        public let expiresAt: UInt64
        public internal(set) var state: State
    }

    public struct Balance: Sendable, Hashable {
        /// Credits minus debits of posted transfers.
        public let posted: Int64
        /// Reserved by pending holds on this account.
        public let held: UInt64
        public var available: Int64 { posted - Int64(held) }

        public init(posted: Int64, held: UInt64) {
            self.posted = posted
            self.held = held
        }
    }

    private var kinds: [AccountID: Kind] = [:]
    private var posted: [AccountID: [String: Int64]] = [:]
    public private(set) var transfers: [String: Transfer] = [:]
    public private(set) var holds: [String: Hold] = [:]

    public init() {}

    public mutating func open(_ account: AccountID, kind: Kind) { kinds[account] = kinds[account] ?? kind }

    public func balance(of account: AccountID, in currency: String) -> Balance {
        let held = holds.values.filter { $0.state == .pending && $0.debit == account && $0.currency == currency }
            .reduce(0) { $0 + $1.amount }
        return Balance(posted: posted[account]?[currency] ?? 0, held: held)
    }

    /// Moves `amount` now. Repeating an id with the same parameters returns the first transfer.
    @discardableResult
    public mutating func transfer(id: String, from debit: AccountID, to credit: AccountID, amount: Money)
        throws(LedgerError) -> Transfer
    {
        let transfer = Transfer(id: id, debit: debit, credit: credit, amount: amount.minorUnits, currency: amount.currency.code)
        if let existing = transfers[id] {
            guard existing == transfer else { throw LedgerError(.idConflict, "transfer \(id) exists with other parameters") }
            return existing
        }
        try check(transfer.debit, transfer.credit, amount: transfer.amount, currency: transfer.currency)
        apply(transfer)
        return transfer
    }

    /// Reserves `amount` on `debit` until `expiresAt`, to be posted to `credit` later.
    @discardableResult
    public mutating func hold(id: String, from debit: AccountID, to credit: AccountID, amount: Money, expiresAt: Timestamp)
        throws(LedgerError) -> Hold
    {
        let hold = Hold(
            id: id, debit: debit, credit: credit, amount: amount.minorUnits, currency: amount.currency.code,
            expiresAt: expiresAt.millisecondsSince1970, state: .pending)
        if let existing = holds[id] {
            guard existing.debit == debit, existing.credit == credit, existing.amount == hold.amount,
                existing.currency == hold.currency, existing.expiresAt == hold.expiresAt
            else { throw LedgerError(.idConflict, "hold \(id) exists with other parameters") }
            return existing
        }
        try check(debit, credit, amount: hold.amount, currency: hold.currency)
        holds[id] = hold
        return hold
    }

    /// Posts up to the held amount from a pending hold as transfer `transferID`; the rest is released.
    @discardableResult
    public mutating func post(hold id: String, amount: UInt64, transferID: String, at now: Timestamp) throws(LedgerError) -> Transfer {
        guard let hold = holds[id] else { throw LedgerError(.unknownHold, "no hold \(id)") }
        if let existing = transfers[transferID], hold.state == .posted {
            guard existing.amount == amount, existing.debit == hold.debit else {
                throw LedgerError(.idConflict, "transfer \(transferID) exists with other parameters")
            }
            return existing
        }
        expireIfDue(id, at: now)
        guard holds[id]!.state == .pending else { throw LedgerError(.holdNotPending, "hold \(id) is \(holds[id]!.state)") }
        guard amount > 0 else { throw LedgerError(.invalidAmount, "a posting moves more than 0") }
        guard amount <= hold.amount else { throw LedgerError(.exceedsHold, "\(amount) exceeds the hold's \(hold.amount)") }
        guard transfers[transferID] == nil else { throw LedgerError(.idConflict, "transfer \(transferID) exists") }
        holds[id]!.state = .posted
        let transfer = Transfer(id: transferID, debit: hold.debit, credit: hold.credit, amount: amount, currency: hold.currency)
        apply(transfer)
        return transfer
    }

    /// Releases a pending hold. Voiding a voided hold is a no-op.
    public mutating func void(hold id: String) throws(LedgerError) {
        guard let hold = holds[id] else { throw LedgerError(.unknownHold, "no hold \(id)") }
        switch hold.state {
        case .pending: holds[id]!.state = .voided
        case .voided: return
        case .posted, .expired: throw LedgerError(.holdNotPending, "hold \(id) is \(hold.state)")
        }
    }

    /// Releases every pending hold past its expiry; returns their ids.
    public mutating func expireHolds(at now: Timestamp) -> [String] {
        let due = holds.values.filter { $0.state == .pending && now.millisecondsSince1970 >= $0.expiresAt }.map(\.id).sorted()
        for id in due { holds[id]!.state = .expired }
        return due
    }

    /// Problems with the books: a currency whose balances do not sum to zero, a customer or merchant account
    /// below zero, or posted balances that differ from replaying the transfers. Empty when sound.
    public func audit() -> [String] {
        var problems: [String] = []
        var replayed: [AccountID: [String: Int64]] = [:]
        for transfer in transfers.values {
            replayed[transfer.debit, default: [:]][transfer.currency, default: 0] -= Int64(transfer.amount)
            replayed[transfer.credit, default: [:]][transfer.currency, default: 0] += Int64(transfer.amount)
        }
        var sums: [String: Int64] = [:]
        for (account, currencies) in posted {
            for (currency, value) in currencies {
                sums[currency, default: 0] += value
                if replayed[account]?[currency] ?? 0 != value {
                    problems.append("\(account) \(currency): posted \(value), transfers say \(replayed[account]?[currency] ?? 0)")
                }
                if kinds[account] != .external, balance(of: account, in: currency).available < 0 {
                    problems.append("\(account) \(currency) is below zero")
                }
            }
        }
        for (currency, sum) in sums where sum != 0 { problems.append("\(currency) balances sum to \(sum)") }
        return problems.sorted()
    }

    private func check(_ debit: AccountID, _ credit: AccountID, amount: UInt64, currency: String) throws(LedgerError) {
        guard let debitKind = kinds[debit], kinds[credit] != nil, debit != credit else {
            throw LedgerError(.unknownAccount, "\(debit) → \(credit)")
        }
        guard amount > 0, amount <= Money.maximumMinorUnits else { throw LedgerError(.invalidAmount, "amount \(amount)") }
        if debitKind != .external {
            let available = balance(of: debit, in: currency).available
            guard available >= Int64(amount) else {
                throw LedgerError(.insufficientFunds, "\(debit) has \(available) \(currency) available")
            }
        }
    }

    private mutating func apply(_ transfer: Transfer) {
        transfers[transfer.id] = transfer
        posted[transfer.debit, default: [:]][transfer.currency, default: 0] -= Int64(transfer.amount)
        posted[transfer.credit, default: [:]][transfer.currency, default: 0] += Int64(transfer.amount)
    }

    private mutating func expireIfDue(_ id: String, at now: Timestamp) {
        if holds[id]!.state == .pending, now.millisecondsSince1970 >= holds[id]!.expiresAt { holds[id]!.state = .expired }
    }
}
