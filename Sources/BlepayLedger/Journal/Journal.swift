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
///
/// A journal can hold the whole books (tests, the audit) or only the part one operation touches, loaded from storage
/// with `init(accounts:balances:holds:transfers:)`; `changes` then says what storage must write back.
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

        public init(id: String, debit: AccountID, credit: AccountID, amount: UInt64, currency: String) {
            self.id = id
            self.debit = debit
            self.credit = credit
            self.amount = amount
            self.currency = currency
        }
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

        public init(id: String, debit: AccountID, credit: AccountID, amount: UInt64, currency: String, expiresAt: UInt64,
            state: State)
        {
            self.id = id
            self.debit = debit
            self.credit = credit
            self.amount = amount
            self.currency = currency
            self.expiresAt = expiresAt
            self.state = state
        }
    }

    public struct Balance: Sendable, Hashable {
        /// Credits minus debits of posted transfers.
        public internal(set) var posted: Int64
        /// Reserved by pending holds on this account.
        public internal(set) var held: UInt64
        public var available: Int64 { posted - Int64(held) }

        public init(posted: Int64, held: UInt64) {
            self.posted = posted
            self.held = held
        }
    }

    /// What an operation changed, for storage to write back in the same transaction.
    public struct Changes: Sendable, Hashable {
        public struct BalanceKey: Sendable, Hashable {
            public let account: AccountID
            public let currency: String
        }

        /// How much a balance moved: storage adds this to the stored row rather than writing the new total, so
        /// that two writers of a row that did not exist yet (which nothing could lock) both count.
        public struct Movement: Sendable, Hashable {
            public fileprivate(set) var posted: Int64 = 0
            public fileprivate(set) var held: Int64 = 0
        }

        public fileprivate(set) var openedAccounts: [AccountID: Kind] = [:]
        public fileprivate(set) var balances: [BalanceKey: Movement] = [:]
        /// In the order they were made.
        public fileprivate(set) var transfers: [Transfer] = []
        public fileprivate(set) var holds: Set<String> = []
    }

    public private(set) var kinds: [AccountID: Kind] = [:]
    private var balances: [AccountID: [String: Balance]] = [:]
    public private(set) var transfers: [String: Transfer] = [:]
    public private(set) var holds: [String: Hold] = [:]
    public private(set) var changes = Changes()

    public init() {}

    /// The part of the books one operation needs: its accounts with their balances, and the holds and transfers
    /// it may find again by id.
    public init(accounts: [AccountID: Kind], balances: [AccountID: [String: Balance]], holds: [Hold] = [],
        transfers: [Transfer] = [])
    {
        kinds = accounts
        self.balances = balances
        self.holds = Dictionary(holds.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.transfers = Dictionary(transfers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public mutating func open(_ account: AccountID, kind: Kind) {
        guard kinds[account] == nil else { return }
        kinds[account] = kind
        changes.openedAccounts[account] = kind
    }

    public func balance(of account: AccountID, in currency: String) -> Balance {
        balances[account]?[currency] ?? Balance(posted: 0, held: 0)
    }

    /// Every balance, by account and currency.
    public var allBalances: [AccountID: [String: Balance]] { balances }

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
        changes.holds.insert(id)
        adjust(debit, hold.currency) { $0.held += hold.amount }
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
        release(id, as: .posted)
        let transfer = Transfer(id: transferID, debit: hold.debit, credit: hold.credit, amount: amount, currency: hold.currency)
        apply(transfer)
        return transfer
    }

    /// Releases a pending hold. Voiding a voided hold is a no-op.
    public mutating func void(hold id: String) throws(LedgerError) {
        guard let hold = holds[id] else { throw LedgerError(.unknownHold, "no hold \(id)") }
        switch hold.state {
        case .pending: release(id, as: .voided)
        case .voided: return
        case .posted, .expired: throw LedgerError(.holdNotPending, "hold \(id) is \(hold.state)")
        }
    }

    /// Releases every pending hold past its expiry; returns their ids.
    public mutating func expireHolds(at now: Timestamp) -> [String] {
        let due = holds.values.filter { $0.state == .pending && now.millisecondsSince1970 >= $0.expiresAt }.map(\.id).sorted()
        for id in due { release(id, as: .expired) }
        return due
    }

    /// Problems with the books: a currency whose balances do not sum to zero, a customer or merchant account
    /// below zero, posted balances that differ from replaying the transfers, or held amounts that differ from the
    /// pending holds. Empty when sound. Meaningful on the whole books only.
    public func audit() -> [String] {
        var problems: [String] = []
        var replayed: [AccountID: [String: Balance]] = [:]
        for transfer in transfers.values {
            replayed[transfer.debit, default: [:]][transfer.currency, default: Balance(posted: 0, held: 0)].posted -= Int64(transfer.amount)
            replayed[transfer.credit, default: [:]][transfer.currency, default: Balance(posted: 0, held: 0)].posted += Int64(transfer.amount)
        }
        for hold in holds.values where hold.state == .pending {
            replayed[hold.debit, default: [:]][hold.currency, default: Balance(posted: 0, held: 0)].held += hold.amount
        }
        var sums: [String: Int64] = [:]
        let accounts = Set(balances.keys).union(replayed.keys)
        for account in accounts {
            let currencies = Set(balances[account]?.keys ?? [:].keys).union(replayed[account]?.keys ?? [:].keys)
            for currency in currencies {
                let value = balance(of: account, in: currency)
                let expected = replayed[account]?[currency] ?? Balance(posted: 0, held: 0)
                sums[currency, default: 0] += value.posted
                if expected != value {
                    problems.append("\(account) \(currency): books say \(value.posted) posted and \(value.held) held, "
                        + "transfers and holds say \(expected.posted) and \(expected.held)")
                }
                if kinds[account] != .external, value.available < 0 {
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
        let debited = balance(of: debit, in: currency).posted.subtractingReportingOverflow(Int64(amount))
        let credited = balance(of: credit, in: currency).posted.addingReportingOverflow(Int64(amount))
        guard !debited.overflow, !credited.overflow else {
            throw LedgerError(.balanceLimit, "\(debit) → \(credit) would pass the largest balance")
        }
        if debitKind != .external {
            let available = balance(of: debit, in: currency).available
            guard available >= Int64(amount) else {
                throw LedgerError(.insufficientFunds, "\(debit) has \(available) \(currency) available")
            }
        }
    }

    private mutating func apply(_ transfer: Transfer) {
        transfers[transfer.id] = transfer
        changes.transfers.append(transfer)
        adjust(transfer.debit, transfer.currency) { $0.posted -= Int64(transfer.amount) }
        adjust(transfer.credit, transfer.currency) { $0.posted += Int64(transfer.amount) }
    }

    /// Ends a pending hold, giving back what it reserved.
    private mutating func release(_ id: String, as state: Hold.State) {
        let hold = holds[id]!
        holds[id]!.state = state
        changes.holds.insert(id)
        adjust(hold.debit, hold.currency) { $0.held -= hold.amount }
    }

    private mutating func adjust(_ account: AccountID, _ currency: String, _ change: (inout Balance) -> Void) {
        let before = balance(of: account, in: currency)
        var after = before
        change(&after)
        balances[account, default: [:]][currency] = after
        let key = Changes.BalanceKey(account: account, currency: currency)
        changes.balances[key, default: Changes.Movement()].posted += after.posted - before.posted
        changes.balances[key, default: Changes.Movement()].held += Int64(after.held) - Int64(before.held)
    }

    private mutating func expireIfDue(_ id: String, at now: Timestamp) {
        if holds[id]!.state == .pending, now.millisecondsSince1970 >= holds[id]!.expiresAt { release(id, as: .expired) }
    }
}
