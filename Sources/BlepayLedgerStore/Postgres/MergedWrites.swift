/// Writes queued one after another, sent to PostgreSQL as one statement: `WITH w0 AS (… RETURNING 1), w1 AS (…)
/// SELECT (SELECT count(*) FROM w0), …`, which answers each write's count. Besides the rows it changes, each
/// statement costs the database a round of its own (the protocol's messages, a portal, a snapshot, the executor's
/// start and end), and a payment's last writes each change a row of another table (docs/benchmarks.md).
///
/// The sub-statements of one statement share its snapshot and do not see one another's changes, so only writes that
/// cannot depend on one another go together: each changes a table none of the others changes, and reads no other
/// table (no SELECT, no UPDATE … FROM, no DELETE … USING). Foreign keys are checked after the whole statement, as
/// after each write before.
enum MergedWrites {
    /// A write that may go out with others: its text, values, and the table it changes.
    struct Write: Sendable {
        let sql: String
        let binds: [SQLValue]
        let table: String
    }

    /// The table a write changes if it may go out with others, or nil: `sql` is a write `PreparedStatements`
    /// prepares to count its rows (a plain INSERT, UPDATE or DELETE, returning nothing of its own), and it is an
    /// INSERT INTO, UPDATE or DELETE FROM one table that reads no other table. Judged once for each text, by the
    /// registry of prepared statements.
    static func table(of sql: String) -> String? {
        guard let prepared = PreparedStatements.prepared(sql), prepared != sql else { return nil }
        let upper = sql.uppercased()
        let words = upper.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" || $0 == ")" || $0 == "," })
        // Only the DELETE's own FROM: a SELECT, UPDATE … FROM or DELETE … USING reads another table.
        guard !words.contains("SELECT"), !words.contains("USING"),
            words.filter({ $0 == "FROM" }).count == (words.first == "DELETE" ? 1 : 0), words.count >= 3
        else { return nil }
        switch (words[0], words[1]) {
        case ("INSERT", "INTO"), ("DELETE", "FROM"): return String(words[2])
        case ("UPDATE", _): return String(words[1])
        default: return nil
        }
    }

    /// Groups a batch in order: each run of writes that may go together becomes one group, and every other
    /// statement (or a write of a table its run changes already) starts a group of its own. `write` says what each
    /// element is.
    static func groups<Element>(_ batch: [Element], write: (Element) -> Write?) -> [[Element]] {
        var groups: [[Element]] = []
        var tables: Set<String> = []
        for element in batch {
            guard let merged = write(element) else {
                groups.append([element])
                tables = []
                continue
            }
            if let last = groups.last, !tables.isEmpty, !tables.contains(merged.table), last.count < limit {
                groups[groups.count - 1].append(element)
            } else {
                groups.append([element])
                tables = []
            }
            tables.insert(merged.table)
        }
        return groups
    }

    /// At most this many writes a statement: the texts that are prepared stay few.
    static let limit = 8

    /// The statement for `writes`, and its values in order.
    static func statement(_ writes: [Write]) -> (sql: String, binds: [SQLValue]) {
        var sql = "WITH "
        for (index, write) in writes.enumerated() {
            if index > 0 { sql += ", " }
            sql += "w\(index) AS (\(write.sql) RETURNING 1)"
        }
        sql += " SELECT " + writes.indices.map { "(SELECT count(*) FROM w\($0))" }.joined(separator: ", ")
        return (sql, writes.flatMap(\.binds))
    }
}
