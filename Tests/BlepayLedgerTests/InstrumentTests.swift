import BlepayLedger
import Testing

@Suite struct InstrumentTests {
    // Published test numbers of each brand (they pass Luhn; no real account behind them).
    @Test(arguments: [
        ("4242424242424242", CardBrand.visa, "123"), ("4000056655665556", .visa, "123"),
        ("5555555555554444", .mastercard, "123"), ("2223003122003222", .mastercard, "123"),
        ("378282246310005", .amex, "1234"), ("6011111111111117", .discover, "123"),
        ("3566002020360505", .jcb, "123"), ("36227206271667", .dinersClub, "123"),
        ("6200000000000005", .unionPay, "123"),
    ])
    func validCardsKeepOnlyBrandLastFourAndExpiry(number: String, brand: CardBrand, cvc: String) throws {
        let card = CardDetails(number: number, expiryMonth: 12, expiryYear: 2030, cvc: cvc)
        let summary = try card.validated(year: 2026, month: 11)
        #expect(summary == CardSummary(brand: brand, lastFour: String(number.suffix(4)), expiryMonth: 12, expiryYear: 2030))
        #expect(!"\(card)".contains(number) && !"\(card)".contains(cvc) && "\(card)".hasSuffix("(redacted)"))
    }

    @Test func spacesAndDashesAreIgnored() throws {
        let card = CardDetails(number: "4242 4242-4242 4242", expiryMonth: 1, expiryYear: 2027, cvc: "000")
        #expect(try card.validated(year: 2026, month: 11).lastFour == "4242")
    }

    @Test func everyBadFieldIsReportedWithItsPathAndCode() {
        func codes(_ card: CardDetails) -> [String] {
            do {
                _ = try card.validated(year: 2026, month: 11)
                return []
            } catch { return error.fields.map { "\($0.path):\($0.code)" } }
        }
        #expect(codes(CardDetails(number: "4242424242424241", expiryMonth: 12, expiryYear: 2030, cvc: "123"))
            == ["card.number:invalid-checksum"])
        #expect(codes(CardDetails(number: "42424242424242", expiryMonth: 12, expiryYear: 2030, cvc: "123"))
            .contains("card.number:invalid-length"))
        #expect(codes(CardDetails(number: "9111111111111111", expiryMonth: 12, expiryYear: 2030, cvc: "123"))
            .contains("card.number:unknown-brand"))
        #expect(codes(CardDetails(number: "4242abcd42424242", expiryMonth: 12, expiryYear: 2030, cvc: "123"))
            .contains("card.number:not-digits"))
        #expect(codes(CardDetails(number: "4242424242424242", expiryMonth: 10, expiryYear: 2026, cvc: "123"))
            == ["card.expiryYear:expired"])
        #expect(codes(CardDetails(number: "4242424242424242", expiryMonth: 11, expiryYear: 2026, cvc: "123")).isEmpty)
        #expect(codes(CardDetails(number: "4242424242424242", expiryMonth: 13, expiryYear: 2030, cvc: "123"))
            == ["card.expiryMonth:invalid-month"])
        #expect(codes(CardDetails(number: "378282246310005", expiryMonth: 12, expiryYear: 2030, cvc: "123"))
            == ["card.cvc:invalid-cvc"])
        #expect(codes(CardDetails(number: "4242424242424242", expiryMonth: 0, expiryYear: 2020, cvc: "12a"))
            == ["card.expiryMonth:invalid-month", "card.expiryYear:expired", "card.cvc:invalid-cvc"])
    }

    @Test func bankAccountsNeedNamesAValidRoutingNumberAndAnAccountNumber() throws {
        let good = BankAccountDetails(
            firstName: "Ada", lastName: "Lovelace", routingNumber: "011000015", accountNumber: "000123456789", kind: .checking)
        let summary = try good.validated()
        #expect(summary.lastFour == "6789" && summary.routingNumber == "011000015")
        #expect(!"\(good)".contains("000123456789"))
        let bad = BankAccountDetails(firstName: " ", lastName: "L\u{7}", routingNumber: "011000016", accountNumber: "12", kind: .savings)
        #expect(throws: ValidationError([
            .init(path: "bankAccount.firstName", code: "missing", message: "required"),
            .init(path: "bankAccount.lastName", code: "invalid-text", message: "at most 64 printable characters"),
            .init(path: "bankAccount.routingNumber", code: "invalid-checksum", message: "the routing number's checksum is wrong"),
            .init(path: "bankAccount.accountNumber", code: "invalid-format", message: "an account number is 4 to 17 digits"),
        ])) { _ = try bad.validated() }
        for routing in ["021000021", "026009593", "121000358"] {
            #expect(throws: Never.self) {
                _ = try BankAccountDetails(firstName: "A", lastName: "B", routingNumber: routing, accountNumber: "1234", kind: .checking)
                    .validated()
            }
        }
    }
}
