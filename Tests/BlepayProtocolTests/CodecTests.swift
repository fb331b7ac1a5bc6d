import BlepayProtocol
import Foundation
import Testing

@Suite struct CodecTests {
    @Test(arguments: Sample.messages.map(\.0))
    func everyMessageRoundTrips(_ name: String) throws {
        let message = try #require(Sample.messages.first { $0.0 == name }?.1)
        let encoded = message.encoded
        #expect(try Message(encoded: encoded) == message)
        #expect(try Message(encoded: encoded).encoded == encoded)
    }

    /// The committed vectors (`Vectors/messages.json`) are what a compatible peer must produce and accept. Set
    /// `BLEPAY_WRITE_VECTORS=1` to rewrite them after a deliberate wire change.
    @Test func messagesMatchTheCommittedVectors() throws {
        if ProcessInfo.processInfo.environment["BLEPAY_WRITE_VECTORS"] == "1" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Dictionary(uniqueKeysWithValues: Sample.messages.map { ($0.0, $0.1.encoded.hex) }))
                .write(to: Vectors.directory.appendingPathComponent("messages.json"))
        }
        let vectors = try Vectors.load("messages.json", as: [String: String].self)
        #expect(vectors.count == Sample.messages.count)
        for (name, message) in Sample.messages {
            let hex = try #require(vectors[name], "no vector for \(name)")
            #expect(message.encoded.hex == hex, "\(name)")
            #expect(try Message(encoded: #require([UInt8](hex: hex))) == message, "\(name)")
        }
    }

    @Test func structuresOutsideMessagesRoundTrip() throws {
        #expect(try MerchantCertificate(encoded: Sample.certificate.encoded) == Sample.certificate)
        #expect(try PreAuthorizationVoucher(encoded: Sample.voucher.encoded) == Sample.voucher)
        let info = try ProtocolInfo(versions: [1], capabilities: [.online, .preAuthorization], maximumMessageSize: 4096)
        #expect(try ProtocolInfo(encoded: info.encoded) == info)
        let offer = try HandshakePayload.Offer(versions: [2, 1])
        #expect(try HandshakePayload.Offer(encoded: offer.encoded) == offer)
        let choice = HandshakePayload.Choice(version: 1, capabilities: .online)
        #expect(try HandshakePayload.Choice(encoded: choice.encoded) == choice)
        let credentials = HandshakePayload.Credentials(certificate: Sample.certificate)
        #expect(try HandshakePayload.Credentials(encoded: credentials.encoded) == credentials)
        let advertisement = AdvertisementData(version: 1, capabilities: .online, ephemeralID: Sample.keyID)
        #expect(advertisement.encoded == [1, 1, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try AdvertisementData(encoded: advertisement.encoded) == advertisement)
    }

    /// `Vectors/info.json`: the info characteristic without and with the channel PSM (§9), and the unknown-field
    /// rule applied to it: the PSM is an odd tag, so a peer that predates it skips it and speaks GATT.
    @Test func infoMatchesTheCommittedVectors() throws {
        struct Vector: Decodable {
            let description: String
            let info: String
            let with_channel: String
            let channel_psm: UInt16
            let with_unknown_odd_field: String
            let with_unknown_even_field: String
        }
        let vector = try Vectors.load("info.json", as: Vector.self)
        let info = try ProtocolInfo(versions: [1], capabilities: .online, maximumMessageSize: 4079)
        let withChannel = try ProtocolInfo(
            versions: [1], capabilities: .online, maximumMessageSize: 4079, channelPSM: vector.channel_psm)
        #expect(info.encoded.hex == vector.info)
        #expect(withChannel.encoded.hex == vector.with_channel)
        #expect(try ProtocolInfo(encoded: #require([UInt8](hex: vector.info))) == info)
        #expect(try ProtocolInfo(encoded: #require([UInt8](hex: vector.with_channel))) == withChannel)
        #expect(try ProtocolInfo(encoded: #require([UInt8](hex: vector.with_unknown_odd_field))) == withChannel)
        let even = try #require([UInt8](hex: vector.with_unknown_even_field))
        #expect(protocolError { _ = try ProtocolInfo(encoded: even) } == .unknownRequiredField)
        #expect(protocolError { _ = try ProtocolInfo(versions: [1], capabilities: [], maximumMessageSize: 1, channelPSM: 0) } == .invalidValue)
        #expect(protocolError { _ = try ProtocolInfo(versions: [1], capabilities: [], maximumMessageSize: 1, channelPSM: 0x100) } == .invalidValue)
        let tooLarge = try #require([UInt8](hex: vector.info + "0503808004"))
        #expect(protocolError { _ = try ProtocolInfo(encoded: tooLarge) } == .invalidValue)
    }

    @Test func signingBytesAreContextAndFieldsWithoutTheSignature() {
        let bytes = Sample.request.signingBytes
        let context = Array(PaymentRequest.signingContext.utf8)
        #expect(Array(bytes.prefix(context.count)) == context)
        // The encoding is the signed fields followed by the signature field (tag 100, length 64).
        #expect(Sample.request.encoded == Array(bytes.dropFirst(context.count)) + [100, 64] + Sample.signature.bytes)
        #expect(Sample.acceptance.signingBytes.starts(with: Array("blepay/1 payment-acceptance\0".utf8)))
        #expect(Sample.acceptance.signingBytes != Sample.offlineAcceptance.signingBytes)
    }

    @Test func amountsAreReadAsPeopleWriteThem() throws {
        let usd = try Currency("USD")
        #expect(try Money(decimal: "25.50", currency: usd).minorUnits == 2550)
        #expect(try Money(decimal: "25.5", currency: usd).minorUnits == 2550)
        #expect(try Money(decimal: "25", currency: usd).minorUnits == 2500)
        #expect(try Money(decimal: "0.07", currency: usd).description == "0.07 USD")
        #expect(try Money(decimal: "1500", currency: Sample.jpy).minorUnits == 1500)
        for bad in ["", ".5", "25.", "25.505", "-1", "+1", "1e3", "1,000", " 1", "25.5.0", "１"] {
            #expect(protocolError { _ = try Money(decimal: bad, currency: usd) } == .invalidAmount, "\(bad)")
        }
        #expect(protocolError { _ = try Money(decimal: "1.5", currency: Sample.jpy) } == .invalidAmount)
        #expect(protocolError { _ = try Money(decimal: "10000000000000.01", currency: usd) } == .invalidAmount)
    }

    // MARK: Rejections, each with its code

    @Test func invalidValuesAreRejectedWithTheirCodes() {
        #expect(protocolError { _ = try Currency("XYZ") } == .invalidCurrency)
        #expect(protocolError { _ = try Currency(code: "JPY", exponent: 2) } == .invalidCurrency)
        #expect(protocolError { _ = try Money(minorUnits: Money.maximumMinorUnits + 1, currency: Sample.eur) } == .invalidAmount)
        #expect(protocolError { _ = try Text.validate(String(repeating: "x", count: 65), field: "f", limit: 64) } == .stringTooLong)
        #expect(protocolError { _ = try Text.validate("a\u{7}b", field: "f", limit: 64) } == .invalidValue)
        #expect(protocolError { _ = try Text.validateIdentifier("no spaces", field: "f") } == .invalidValue)
        // A merchant's name carries nothing invisible that could make it pass for another, or reorder the display.
        for spoof in ["Bob\u{202E}skcubratS", "Star\u{200B}bucks", "Starbucks\u{2066}", "\u{FEFF}Starbucks", "Star\u{AD}bucks",
            "Star\u{200D}bucks", "\u{061C}Café"]
        {
            #expect(protocolError { _ = try Text.validateName(spoof, field: "f", limit: 64) } == .invalidValue)
        }
        for name in ["Café Zürich", "Bob's Kiosk", "東京カフェ", "مقهى", "Ristorante 💶"] {
            #expect(throws: Never.self) { _ = try Text.validateName(name, field: "f", limit: 64) }
        }
        #expect(protocolError {
            _ = try PaymentRequest(
                paymentID: Sample.paymentID, amount: Sample.request.amount, reference: nil, merchantID: "m_cafe.42",
                merchantName: "Caf\u{202E}é", createdAt: Sample.request.createdAt, expiresAt: Sample.request.expiresAt,
                businessOnline: true, signature: Sample.signature)
        } == .invalidValue)
        #expect(protocolError { _ = try PaymentID(bytes: [1, 2, 3]) } == .invalidLength)
        #expect(protocolError { _ = try AdvertisementData(encoded: [1, 2, 3]) } == .invalidLength)
    }

    @Test func malformedEncodingsAreRejectedWithTheirCodes() throws {
        let otherPaid = Message.otherPaid(OtherPaid(paymentID: Sample.paymentID)).encoded  // 05 01 10 <16 bytes>
        func decode(_ bytes: [UInt8]) -> ProtocolError.Code? { protocolError { _ = try Message(encoded: bytes) } }

        #expect(decode([]) == .truncated)
        #expect(decode([0x63] + otherPaid.dropFirst()) == .unknownMessageType)
        #expect(decode(Array(otherPaid.dropLast())) == .truncated)
        #expect(decode(otherPaid + [0x02]) == .truncated)  // a field header with no length
        #expect(decode(otherPaid + [0x02, 0x00]) == .unknownRequiredField)  // unknown even tag
        #expect(try Message(encoded: otherPaid + [0x03, 0x01, 0xFF]) == .otherPaid(OtherPaid(paymentID: Sample.paymentID)))
        #expect(decode(otherPaid + [0x01, 0x00]) == .nonCanonical)  // field 1 repeated
        #expect(decode([5, 0x01, 0x90, 0x00] + Sample.paymentID.bytes) == .nonCanonical)  // length 16 as 2 bytes
        #expect(decode([5, 0x01, 0x0F] + Sample.paymentID.bytes.dropLast()) == .invalidLength)
        #expect(decode([5]) == .missingField)
        #expect(decode(Array(repeating: 0, count: Framing.maximumRecordSize + 1)) == .messageTooLarge)

        // A signed structure rejects any unknown field, odd ones too.
        let request = Message.paymentRequest(Sample.request).encoded
        let withOddField = request.prefix(request.count - 66) + [0x0B, 0x00] + request.suffix(66)
        #expect(decode(Array(withOddField)) == .unknownRequiredField)
    }

    @Test func badFieldValuesAreRejected() throws {
        let cancel = Message.cancelPayment(CancelPayment(paymentID: Sample.paymentID, reason: .expired)).encoded
        // 04 01 10 <id> 02 01 65: reason 101; make it 999 (not a code) and a 10-byte varint.
        #expect(protocolError { _ = try Message(encoded: cancel.dropLast(3) + [0x02, 0x02, 0xE7, 0x07]) } == .invalidValue)
        let overflow: [UInt8] = [0x02, 0x0B] + Array(repeating: 0xFF, count: 10) + [0x01]
        #expect(protocolError { _ = try Message(encoded: cancel.dropLast(3) + overflow) } == .invalidValue)
        let request = Message.paymentRequest(Sample.request).encoded
        // businessOnline (tag 9) is 09 01 01; 2 is not a boolean.
        let boolAt = try #require(request.firstRange(of: [0x09, 0x01, 0x01])).lowerBound
        var badBool = request
        badBool[boolAt + 2] = 2
        #expect(protocolError { _ = try Message(encoded: badBool) } == .invalidValue)
        // "EUR" with exponent 3.
        let currencyAt = try #require(request.firstRange(of: Array("EUR".utf8))).upperBound
        var badExponent = request
        badExponent[currencyAt] = 3
        #expect(protocolError { _ = try Message(encoded: badExponent) } == .invalidCurrency)
        // Invalid UTF-8 in the merchant name.
        let nameAt = try #require(request.firstRange(of: Array("Caf".utf8))).lowerBound
        var badUTF8 = request
        badUTF8[nameAt] = 0xFF
        #expect(protocolError { _ = try Message(encoded: badUTF8) } == .invalidUTF8)
    }
}
