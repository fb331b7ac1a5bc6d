import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation

/// The operator's export of a merchant's payments (`blepay-ledger export`) and its short listing (`payments`): the
/// same pages as `GET /v1/payments` for the operator, read from the ledger's database directly, one page at a time.
public enum PaymentExport {
    public enum Format: String, Sendable, Hashable, CaseIterable { case csv, json }

    static let header = ["id", "merchant", "status", "time", "amount", "tip", "currency", "reference", "instrument", "transaction"]

    /// A day (`YYYY-MM-DD`, its start in UTC) or milliseconds since 1970; nil for anything else.
    public static func milliseconds(_ text: String) -> UInt64? {
        if let milliseconds = UInt64(text), milliseconds <= UInt64(Int64.max) { return milliseconds }
        return (try? LedgerOperations.day(text, in: .gmt)).map { UInt64($0.start) }
    }

    /// A payment's columns as they are: its time is the first of its history, the creation of an online payment and
    /// the settlement of an offline one; the transaction is the transfer its receipt names, once settled.
    static func fields(_ payment: PaymentResource) -> [String] {
        let time = payment.history.first.map { change in
            Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date(timeIntervalSince1970: Double(change.at) / 1000))
        }
        let transaction = payment.receipt.flatMap { Data(base64Encoded: $0) }
            .flatMap { try? Receipt(encoded: [UInt8]($0)) }?.transactionID
        return [payment.id, payment.merchantId, payment.status.rawValue, time ?? "", String(payment.amount), String(payment.tip),
            payment.currency, payment.reference ?? "", payment.instrumentId ?? "", transaction ?? ""]
    }

    /// One CSV line (RFC 4180, CRLF). A text field a spreadsheet would take for a formula (a reference is typed by
    /// the merchant) gets a leading `'`; a field with a comma, a quote or a line break is quoted, its quotes doubled.
    static func csvLine(_ fields: [String]) -> String {
        fields.map { field in
            let text = field.first.map { "=+-@\t\r".contains($0) } == true && Int(field) == nil ? "'" + field : field
            guard text.contains(where: { ",\"\r\n".contains($0) }) else { return text }
            return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: ",") + "\r\n"
    }

    /// Aligned columns for people, control characters of a reference blanked.
    static func table(_ payments: [PaymentResource]) -> String {
        let rows = [["time", "id", "merchant", "status", "amount", "tip", "currency", "reference"]]
            + payments.map { payment in
                let all = fields(payment)
                return [all[3], all[0], all[1], all[2], all[4], all[5], all[6], all[7].replacing(/[\x00-\x1f\x7f]/, with: " ")]
            }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces) + "\n"
        }.joined()
    }
}

extension LedgerServer {
    /// Writes `merchant`'s payments from `from` (inclusive) to `to` (exclusive), newest first, to `write` as they are
    /// read, a page at a time.
    public func export(merchant: String, from: UInt64?, to: UInt64?, format: PaymentExport.Format,
        _ write: (String) -> Void) async throws
    {
        var query = PaymentQuery(merchant: merchant, from: from, to: to, limit: PaymentQuery.maximumLimit)
        var first = true
        write(format == .csv ? PaymentExport.csvLine(PaymentExport.header) : "[")
        repeat {
            let page = try await payments(query)
            for payment in page.data {
                switch format {
                case .csv: write(PaymentExport.csvLine(PaymentExport.fields(payment)))
                case .json: write((first ? "\n" : ",\n") + String(decoding: try LedgerAPI.encode(payment), as: UTF8.self))
                }
                first = false
            }
            query.cursor = page.nextCursor
        } while query.cursor != nil
        if format == .json { write("\n]\n") }
    }

    /// A page of a merchant's or an account's payments as a table, with the cursor of the next page if there is one.
    public func paymentTable(merchant: String?, account: String?, limit: Int, cursor: String?) async throws -> String {
        let page = try await payments(PaymentQuery(merchant: merchant, account: account, limit: limit, cursor: cursor))
        return PaymentExport.table(page.data) + (page.nextCursor.map { "more: --cursor \($0)\n" } ?? "")
    }
}
