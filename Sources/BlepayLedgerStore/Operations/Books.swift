import BlepayLedger
import BlepayProtocol

/// The journal's tables: loads the part of the books an operation touches and writes back what the operation
/// changed. Writes add each movement to whatever row is there by then, so concurrent movements all count; only the
/// rows an operation may take money from are locked (in one order, so that concurrent operations cannot deadlock),
/// because only they can run short. Books that are only credited are read unlocked: a busy merchant's balance is
/// not a queue every payment waits in. A balance row that does not exist yet cannot be locked either; it can only
/// be credited (nothing is available in it).
enum Books {
    /// The holds an operation loads, locked: by id, or the one a payment names (sent with the statement that reads
    /// the payment).
    enum Holds {
        case ids([String])
        case ofPayment(merchant: String, id: String)
    }

    /// The books an operation debits (`books`, locked) and only credits (`credited`, not locked), and its holds.
    static func load(_ tx: any SQLTransaction, books: [AccountID], credited: [AccountID] = [], holds: [String] = []) throws
        -> Journal
    {
        try send(tx, books: books, credited: credited, holds: .ids(holds)).get()
    }

    /// `load`'s statements, sent together and read when the journal is asked for.
    static func send(_ tx: any SQLTransaction, books: [AccountID], credited: [AccountID] = [], holds: Holds) throws
        -> Pending<Journal>
    {
        let locked = Set(books).sorted()
        let ids = Set(books + credited).sorted()
        let unlocked = Set(credited).subtracting(locked).sorted()
        let kindRows = try tx.send("SELECT id, kind FROM books WHERE id IN (\(marks(ids.count)))", ids.map { .text($0.rawValue) })
        let balanceQuery = "SELECT book, currency, posted, held FROM balances WHERE book IN "
        let lockedRows = try tx.send(
            balanceQuery + "(\(marks(locked.count))) ORDER BY book, currency" + tx.dialect.forUpdate, locked.map { .text($0.rawValue) })
        let unlockedRows = try unlocked.isEmpty ? nil
            : tx.send(balanceQuery + "(\(marks(unlocked.count)))", unlocked.map { .text($0.rawValue) })
        let holdQuery = "SELECT id, debit, credit, amount, currency, expires_at, state FROM holds WHERE id "
        let holdRows: Pending<SQLResult>? = switch holds {
        case .ids(let ids) where ids.isEmpty: nil
        case .ids(let ids): try tx.send(holdQuery + "IN (\(marks(ids.count)))" + tx.dialect.forUpdate, ids.map { .text($0) })
        case .ofPayment(let merchant, let id):
            try tx.send(holdQuery + "= (SELECT hold FROM payments WHERE merchant = ? AND id = ?)" + tx.dialect.forUpdate,
                [.text(merchant), .text(id)])
        }
        return Pending {
            var kinds: [AccountID: Journal.Kind] = [:]
            for row in try kindRows.rows() {
                guard let kind = Journal.Kind(rawValue: try row.text(1)) else { throw StorageError.corrupt(column: 1, row.values[1]) }
                kinds[AccountID(try row.text(0))] = kind
            }
            var balances: [AccountID: [String: Journal.Balance]] = [:]
            for row in try lockedRows.rows() + (unlockedRows?.rows() ?? []) {
                balances[AccountID(try row.text(0)), default: [:]][try row.text(1)] =
                    Journal.Balance(posted: try row.integer(2), held: UInt64(try row.integer(3)))
            }
            return Journal(accounts: kinds, balances: balances, holds: try holdRows?.rows().map(hold) ?? [])
        }
    }

    /// The whole books, for the audit.
    static func loadAll(_ tx: any SQLTransaction) throws -> Journal {
        var kinds: [AccountID: Journal.Kind] = [:]
        for row in try tx.rows("SELECT id, kind FROM books", []) {
            guard let kind = Journal.Kind(rawValue: try row.text(1)) else { throw StorageError.corrupt(column: 1, row.values[1]) }
            kinds[AccountID(try row.text(0))] = kind
        }
        var balances: [AccountID: [String: Journal.Balance]] = [:]
        for row in try tx.rows("SELECT book, currency, posted, held FROM balances", []) {
            balances[AccountID(try row.text(0)), default: [:]][try row.text(1)] =
                Journal.Balance(posted: try row.integer(2), held: UInt64(try row.integer(3)))
        }
        let holds = try tx.rows("SELECT id, debit, credit, amount, currency, expires_at, state FROM holds", []).map(hold)
        let transfers = try tx.rows("SELECT id, debit, credit, amount, currency FROM transfers", []).map { row in
            Journal.Transfer(id: try row.text(0), debit: AccountID(try row.text(1)), credit: AccountID(try row.text(2)),
                amount: UInt64(try row.integer(3)), currency: try row.text(4))
        }
        return Journal(accounts: kinds, balances: balances, holds: holds, transfers: transfers)
    }

    /// Writes what `journal` changed, without waiting (a failure is thrown by the next read or the commit). The
    /// balances of books in `last` (busy ones, such as the merchant's balance a payment credits) are written as late
    /// as the database allows (`SQLTransaction.runLast`); the transaction must not read them again.
    static func save(_ tx: any SQLTransaction, _ journal: Journal, at now: Timestamp, last: Set<AccountID> = []) throws {
        let changes = journal.changes
        for (book, kind) in changes.openedAccounts.sorted(by: { $0.key < $1.key }) {
            try tx.send("INSERT INTO books (id, kind) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", [.text(book.rawValue), .text(kind.rawValue)])
        }
        for (key, movement) in changes.balances.sorted(by: { ($0.key.account, $0.key.currency) < ($1.key.account, $1.key.currency) }) {
            let upsert = """
                INSERT INTO balances (book, currency, posted, held) VALUES (?, ?, ?, ?)
                ON CONFLICT (book, currency) DO UPDATE
                SET posted = balances.posted + excluded.posted, held = balances.held + excluded.held
                """
            let binds: [SQLValue] = [.text(key.account.rawValue), .text(key.currency), .integer(movement.posted), .integer(movement.held)]
            if last.contains(key.account) { try tx.runLast(upsert, binds) } else { try tx.send(upsert, binds) }
        }
        for transfer in changes.transfers {
            try tx.send(
                "INSERT INTO transfers (id, debit, credit, amount, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(transfer.id), .text(transfer.debit.rawValue), .text(transfer.credit.rawValue),
                 .integer(Int64(transfer.amount)), .text(transfer.currency), now.sqlValue])
        }
        for id in changes.holds.sorted() {
            let hold = journal.holds[id]!
            try tx.send(
                """
                INSERT INTO holds (id, debit, credit, amount, currency, expires_at, state) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET state = excluded.state
                """,
                [.text(hold.id), .text(hold.debit.rawValue), .text(hold.credit.rawValue), .integer(Int64(hold.amount)),
                 .text(hold.currency), .integer(Int64(hold.expiresAt)), .text(hold.state.rawValue)])
        }
    }

    static func balances(_ tx: any SQLTransaction, of book: AccountID) throws -> [BalanceResource] {
        try tx.rows("SELECT currency, posted, held FROM balances WHERE book = ? ORDER BY currency", [.text(book.rawValue)]).map { row in
            BalanceResource(currency: try row.text(0), posted: try row.integer(1), held: try row.integer(2))
        }
    }

    /// `?, ?, …` for an IN list.
    static func marks(_ count: Int) -> String { Array(repeating: "?", count: max(count, 1)).joined(separator: ", ") }

    private static func hold(_ row: SQLRow) throws -> Journal.Hold {
        guard let state = Journal.Hold.State(rawValue: try row.text(6)) else { throw StorageError.corrupt(column: 6, row.values[6]) }
        return Journal.Hold(
            id: try row.text(0), debit: AccountID(try row.text(1)), credit: AccountID(try row.text(2)),
            amount: UInt64(try row.integer(3)), currency: try row.text(4), expiresAt: UInt64(try row.integer(5)), state: state)
    }
}

extension Timestamp {
    var sqlValue: SQLValue { .integer(Int64(clamping: millisecondsSince1970)) }
}

extension Timestamp? {
    var sqlValue: SQLValue { map(\.sqlValue) ?? .null }
}

extension SQLRow {
    func timestamp(_ column: Int) throws(StorageError) -> Timestamp {
        Timestamp(millisecondsSince1970: UInt64(clamping: try integer(column)))
    }

    func optionalTimestamp(_ column: Int) throws(StorageError) -> Timestamp? {
        values[column] == .null ? nil : try timestamp(column)
    }
}
