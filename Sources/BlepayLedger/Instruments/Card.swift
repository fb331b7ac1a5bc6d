/// A card's brand, from its number's prefix (IIN), with the number lengths and CVC length the brand uses.
public enum CardBrand: String, Sendable, Hashable, Codable, CaseIterable {
    case visa, mastercard, amex, discover, jcb, dinersClub = "diners-club", unionPay = "unionpay"

    /// Prefix ranges compared on the number's leading digits, most specific first.
    private static let ranges: [(brand: CardBrand, digits: Int, range: ClosedRange<Int>)] = [
        (.discover, 4, 6011...6011), (.mastercard, 4, 2221...2720), (.jcb, 4, 3528...3589),
        (.dinersClub, 3, 300...305), (.discover, 3, 644...649), (.amex, 2, 34...34), (.amex, 2, 37...37),
        (.dinersClub, 2, 36...36), (.dinersClub, 2, 38...39), (.mastercard, 2, 51...55), (.discover, 2, 65...65),
        (.unionPay, 2, 62...62), (.visa, 1, 4...4),
    ]

    public init?(number: String) {
        guard number.isDigits,
            let match = Self.ranges.first(where: { entry in
                number.count >= entry.digits && entry.range.contains(Int(number.prefix(entry.digits))!)
            })
        else { return nil }
        self = match.brand
    }

    public var numberLengths: Set<Int> {
        switch self {
        case .visa: [13, 16, 19]
        case .mastercard: [16]
        case .amex: [15]
        case .discover, .jcb, .unionPay: [16, 17, 18, 19]
        case .dinersClub: [14, 15, 16, 17, 18, 19]
        }
    }

    public var cvcLength: Int { self == .amex ? 4 : 3 }
}

/// Card details as a customer enters them. Only `validated(now:)` reads the number and CVC; the description
/// shows neither, so that logging one never leaks them.
public struct CardDetails: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let number: String
    let cvc: String
    public let expiryMonth: Int
    public let expiryYear: Int

    public init(number: String, expiryMonth: Int, expiryYear: Int, cvc: String) {
        // Spaces and dashes as people type them are not part of the number.
        self.number = String(number.filter { $0 != " " && $0 != "-" })
        self.cvc = cvc
        self.expiryMonth = expiryMonth
        self.expiryYear = expiryYear
    }

    public var description: String { "card ending \(number.isDigits ? String(number.suffix(4)) : "????") (redacted)" }
    public var debugDescription: String { description }

    /// Checks the number (digits, brand, length for the brand, Luhn), the expiry (a real month, not past) and the
    /// CVC (digits, the brand's length); every failing field is reported.
    public func validated(year: Int, month: Int) throws(ValidationError) -> CardSummary {
        var check = FieldChecker("card")
        let brand = CardBrand(number: number)
        check.require(number.isDigits, "number", "not-digits", "the card number is digits only")
        if number.isDigits {
            check.require(brand != nil, "number", "unknown-brand", "no card brand uses this number's prefix")
            if let brand {
                check.require(brand.numberLengths.contains(number.count), "number", "invalid-length",
                    "a \(brand.rawValue) number has \(brand.numberLengths.sorted().map(String.init).joined(separator: ", ")) digits")
            }
            check.require(Self.passesLuhn(number), "number", "invalid-checksum", "the card number's check digit is wrong")
        }
        check.require((1...12).contains(expiryMonth), "expiryMonth", "invalid-month", "the month is 1 to 12")
        check.require((expiryYear, expiryMonth) >= (year, month), "expiryYear", "expired", "the card has expired")
        check.require(expiryYear <= year + 20, "expiryYear", "too-far", "the expiry is more than 20 years away")
        check.require(cvc.isDigits && cvc.count == (brand?.cvcLength ?? cvc.count), "cvc", "invalid-cvc",
            "the security code is \(brand?.cvcLength ?? 3) digits")
        try check.finish()
        return CardSummary(brand: brand!, lastFour: String(number.suffix(4)), expiryMonth: expiryMonth, expiryYear: expiryYear)
    }

    /// The Luhn (mod 10) check.
    static func passesLuhn(_ digits: String) -> Bool {
        let sum = digits.digitValues.reversed().enumerated().reduce(0) { sum, pair in
            let (index, digit) = pair
            guard index % 2 == 1 else { return sum + digit }
            return sum + (digit * 2 > 9 ? digit * 2 - 9 : digit * 2)
        }
        return sum % 10 == 0
    }
}

/// What is kept of a card: never its number or CVC.
public struct CardSummary: Sendable, Hashable, Codable {
    public let brand: CardBrand
    public let lastFour: String
    public let expiryMonth: Int
    public let expiryYear: Int

    public init(brand: CardBrand, lastFour: String, expiryMonth: Int, expiryYear: Int) {
        self.brand = brand
        self.lastFour = lastFour
        self.expiryMonth = expiryMonth
        self.expiryYear = expiryYear
    }
}
