/// An ISO 4217 currency: its alphabetic code and the exponent of its minor unit (2 for EUR: 1 EUR = 100 cents).
/// Only active ISO 4217 currencies with their official exponent are valid, so a peer cannot make "1000 JPY" mean
/// 10 JPY by sending the wrong exponent.
public struct Currency: Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let exponent: UInt8

    /// The currency with this code, with its ISO 4217 exponent.
    public init(_ code: String) throws(ProtocolError) {
        guard let exponent = Self.exponents[code] else {
            throw ProtocolError(.invalidCurrency, "'\(code.prefix(8))' is not an active ISO 4217 currency code")
        }
        self.code = code
        self.exponent = exponent
    }

    /// A currency as sent on the wire: the exponent must be the one ISO 4217 gives the code.
    public init(code: String, exponent: UInt8) throws(ProtocolError) {
        try self.init(code)
        guard exponent == self.exponent else {
            throw ProtocolError(.invalidCurrency, "\(code) has exponent \(self.exponent), not \(exponent)")
        }
    }

    public var description: String { code }

    /// Active ISO 4217 codes (list one, 2024) and minor-unit exponents; funds codes and precious metals excluded.
    static let exponents: [String: UInt8] = {
        var table: [String: UInt8] = [:]
        for (exponent, codes) in [
            (0, "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"),
            (3, "BHD IQD JOD KWD LYD OMR TND"),
            (4, "CLF UYW"),
            (2, """
                AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF \
                CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL \
                HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP \
                MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD \
                SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD UYU UZS \
                VED VES WST XCD XCG YER ZAR ZMW ZWG
                """),
        ] {
            for code in codes.split(separator: " ") { table[String(code)] = UInt8(exponent) }
        }
        return table
    }()
}

/// An amount of money in minor units of its currency (cents for EUR). Integer only: no floating point ever
/// touches money.
public struct Money: Sendable, Hashable, CustomStringConvertible {
    /// Largest amount blepay carries: 10^15 minor units, far above any card or account limit, and safe in a
    /// JSON number and a signed 64-bit column.
    public static let maximumMinorUnits: UInt64 = 1_000_000_000_000_000

    public let minorUnits: UInt64
    public let currency: Currency

    public init(minorUnits: UInt64, currency: Currency) throws(ProtocolError) {
        guard minorUnits <= Self.maximumMinorUnits else {
            throw ProtocolError(.invalidAmount, "\(minorUnits) minor units exceeds \(Self.maximumMinorUnits)")
        }
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// The amount a person writes: "25.50" in USD is 2550 minor units, "25" is 2500; no more fraction digits than
    /// the currency has, no sign, no exponent, no grouping.
    public init(decimal text: String, currency: Currency) throws(ProtocolError) {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        let exponent = Int(currency.exponent)
        guard !whole.isEmpty, whole.count <= 16, whole.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            parts.count == 1 || !fraction.isEmpty, fraction.count <= exponent,
            fraction.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else {
            throw ProtocolError(.invalidAmount, "'\(text)' is not an amount in \(currency.code) (e.g. \(Self.example(currency)))")
        }
        let digits = whole + fraction + String(repeating: "0", count: exponent - fraction.count)
        guard let minorUnits = UInt64(digits) else { throw ProtocolError(.invalidAmount, "'\(text)' is too large") }
        try self.init(minorUnits: minorUnits, currency: currency)
    }

    private static func example(_ currency: Currency) -> String {
        currency.exponent == 0 ? "25" : "25." + String(repeating: "0", count: Int(currency.exponent))
    }

    /// "25.50 USD".
    public var description: String {
        let exponent = Int(currency.exponent)
        guard exponent > 0 else { return "\(minorUnits) \(currency.code)" }
        var scale: UInt64 = 1
        for _ in 0..<exponent { scale *= 10 }
        let fraction = String(minorUnits % scale)
        return "\(minorUnits / scale).\(String(repeating: "0", count: exponent - fraction.count))\(fraction) \(currency.code)"
    }
}
