import BlepayLedger
import BlepayProtocol
import Foundation

/// Payment instruments: validated once, then kept only as what may be shown (brand, last four digits, expiry).
/// Each instrument has its own book, funded from outside by the operator, that payments draw on.
extension LedgerOperations {
    static func instrumentBook(_ id: String) -> AccountID { AccountID("instrument:\(id)") }
    static let deposits = AccountID("external:deposits")

    struct StoredDetails: Codable {
        var card: CardSummary?
        var bankAccount: BankAccountSummary?
        var delegated: CreateInstrument.Delegated?
    }

    public func addInstrument(_ tx: any SQLTransaction, _ body: CreateInstrument, device: Device, at now: Timestamp) throws
        -> InstrumentResource
    {
        guard device.accountKind == .customer else { throw APIError.forbidden("only customer devices hold instruments") }
        var details = StoredDetails()
        switch body.type {
        case .card:
            guard let card = body.card else { throw APIError.invalid("card", "missing", "a card instrument needs card details") }
            let date = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: now.date)
            do {
                details.card = try CardDetails(number: card.number, expiryMonth: card.expiryMonth, expiryYear: card.expiryYear,
                    cvc: card.cvc).validated(year: date.year!, month: date.month!)
            } catch { throw APIError(error) }
        case .bankAccount:
            guard let bank = body.bankAccount else {
                throw APIError.invalid("bankAccount", "missing", "a bank account instrument needs its details")
            }
            do {
                details.bankAccount = try BankAccountDetails(firstName: bank.firstName, lastName: bank.lastName,
                    routingNumber: bank.routingNumber, accountNumber: bank.accountNumber, kind: bank.accountType).validated()
            } catch { throw APIError(error) }
        case .delegated:
            guard let delegated = body.delegated else {
                throw APIError.invalid("delegated", "missing", "a delegated instrument needs its provider and reference")
            }
            details.delegated = CreateInstrument.Delegated(
                provider: try Self.text(delegated.provider, field: "delegated.provider", limit: 64),
                reference: try Self.text(delegated.reference, field: "delegated.reference", limit: 128))
        }
        let id = Self.randomID("ins_")
        try tx.run(
            "INSERT INTO instruments (id, account, type, details, blocked, created_at) VALUES (?, ?, ?, ?, 0, ?)",
            [.text(id), .text(device.account), .text(body.type.rawValue),
             .text(String(decoding: try JSONEncoder().encode(details), as: UTF8.self)), now.sqlValue])
        var journal = Journal()
        journal.open(Self.instrumentBook(id), kind: .customer)
        try Books.save(tx, journal, at: now)
        return try instrument(tx, id, account: device.account)
    }

    public func instruments(_ tx: any SQLTransaction, account: String) throws -> [InstrumentResource] {
        try tx.rows("SELECT id FROM instruments WHERE account = ? ORDER BY created_at, id", [.text(account)]).map { row in
            try instrument(tx, try row.text(0), account: account)
        }
    }

    /// One instrument; `account` nil for the operator, who sees every instrument.
    public func instrument(_ tx: any SQLTransaction, _ id: String, account: String?) throws -> InstrumentResource {
        guard let row = try tx.row("SELECT account, type, details, blocked FROM instruments WHERE id = ?", [.text(id)]),
            try account == nil || row.text(0) == account,
            let type = CreateInstrument.Kind(rawValue: try row.text(1))
        else { throw APIError.notFound("instrument") }
        let details = try JSONDecoder().decode(StoredDetails.self, from: Data(try row.text(2).utf8))
        let description = switch type {
        case .card: "\(details.card?.brand.rawValue ?? "card") ending \(details.card?.lastFour ?? "")"
        case .bankAccount: "bank account ending \(details.bankAccount?.lastFour ?? "")"
        case .delegated: "\(details.delegated?.provider ?? "delegated") instrument"
        }
        return InstrumentResource(
            id: id, type: type, description: description, card: details.card, bankAccount: details.bankAccount,
            delegated: details.delegated, blocked: try row.integer(3) != 0, balances: try Books.balances(tx, of: Self.instrumentBook(id)))
    }

    /// The operator moves money into an instrument from outside.
    public func deposit(_ tx: any SQLTransaction, instrument id: String, _ body: Deposit, at now: Timestamp) throws -> InstrumentResource {
        let amount = try Self.money(body.amount, body.currency)
        _ = try instrument(tx, id, account: nil)
        var journal = try Books.load(tx, books: [Self.deposits], credited: [Self.instrumentBook(id)])
        journal.open(Self.deposits, kind: .external)
        do { try journal.transfer(id: Self.randomID("deposit:"), from: Self.deposits, to: Self.instrumentBook(id), amount: amount) } catch {
            throw APIError(error)
        }
        try Books.save(tx, journal, at: now)
        return try instrument(tx, id, account: nil)
    }

    /// The operator blocks (or unblocks) an instrument: acceptances and pre-authorizations with it are refused with
    /// `ledger.blocked`.
    public func block(_ tx: any SQLTransaction, instrument id: String, blocked: Bool) throws -> InstrumentResource {
        guard try tx.run("UPDATE instruments SET blocked = ? WHERE id = ?", [.integer(blocked ? 1 : 0), .text(id)]) == 1 else {
            throw APIError.notFound("instrument")
        }
        return try instrument(tx, id, account: nil)
    }
}

extension Timestamp {
    var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }
}
