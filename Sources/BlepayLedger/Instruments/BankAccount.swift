/// A US bank account for ACH debits, as a customer enters it.
public struct BankAccountDetails: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, Codable {
        case checking, savings
    }

    public let firstName: String
    public let lastName: String
    public let routingNumber: String
    let accountNumber: String
    public let kind: Kind

    public init(firstName: String, lastName: String, routingNumber: String, accountNumber: String, kind: Kind) {
        self.firstName = firstName
        self.lastName = lastName
        self.routingNumber = routingNumber
        self.accountNumber = accountNumber
        self.kind = kind
    }

    public var description: String { "\(kind.rawValue) account ending \(accountNumber.suffix(4)) (redacted)" }

    /// Names present and printable (at most 64 characters), the ABA routing number's checksum, and an account
    /// number of 4 to 17 digits.
    public func validated() throws(ValidationError) -> BankAccountSummary {
        var check = FieldChecker("bankAccount")
        for (field, name) in [("firstName", firstName), ("lastName", lastName)] {
            check.require(!name.allSatisfy(\.isWhitespace), field, "missing", "required")
            check.require(name.count <= 64 && !name.unicodeScalars.contains { $0.properties.generalCategory == .control },
                field, "invalid-text", "at most 64 printable characters")
        }
        check.require(routingNumber.isDigits && routingNumber.count == 9, "routingNumber", "invalid-length",
            "an ABA routing number is 9 digits")
        if routingNumber.isDigits && routingNumber.count == 9 {
            check.require(Self.passesABAChecksum(routingNumber), "routingNumber", "invalid-checksum",
                "the routing number's checksum is wrong")
        }
        check.require(accountNumber.isDigits && (4...17).contains(accountNumber.count), "accountNumber",
            "invalid-format", "an account number is 4 to 17 digits")
        try check.finish()
        return BankAccountSummary(
            firstName: firstName, lastName: lastName, routingNumber: routingNumber,
            lastFour: String(accountNumber.suffix(4)), kind: kind)
    }

    /// 3·(d1 + d4 + d7) + 7·(d2 + d5 + d8) + (d3 + d6 + d9) ≡ 0 (mod 10).
    static func passesABAChecksum(_ routing: String) -> Bool {
        let d = routing.digitValues
        let sum = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])
        return sum % 10 == 0
    }
}

/// What is kept of a bank account for display: the full account number is only handed to the payment processor.
public struct BankAccountSummary: Sendable, Hashable, Codable {
    public let firstName: String
    public let lastName: String
    public let routingNumber: String
    public let lastFour: String
    public let kind: BankAccountDetails.Kind
}
