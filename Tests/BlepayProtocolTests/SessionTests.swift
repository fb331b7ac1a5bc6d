import BlepayProtocol
import TestSupport
import Testing

/// The handshake, version negotiation, merchant authentication and the transport (`docs/protocol.md` §7): each
/// failure ends with its own code.
@Suite struct SessionTests {
    @Test func bothSidesAgreeOnTheSession() throws {
        let (_, business, customer) = try Parties.handshake()
        #expect(business.sessionHash == customer.sessionHash)
        #expect(business.version == 1 && customer.version == 1)
        #expect(business.capabilities == [.online])
        #expect(customer.certificate == Parties.certificate())
    }

    @Test func theHighestCommonVersionIsChosen() throws {
        let info = try ProtocolInfo(versions: [3, 2, 1], capabilities: [], maximumMessageSize: 4079)
        let business = try Parties.business(versions: [2, 1], info: info.encoded)
        let (_, session, _) = try Parties.handshake(business: business, customer: Parties.customer(info: info))
        #expect(session.version == 2)
    }

    @Test func noCommonVersionFailsOnBothSides() throws {
        var business = try Parties.business(versions: [2])
        var customer = Parties.customer()
        let first = try business.start()
        var refusal: Record?
        do {
            _ = try customer.receive(first, at: Parties.now)
        } catch {
            #expect(error.code == .unsupportedVersion)
            refusal = customer.failureRecord(for: error)
        }
        let record = try #require(refusal)
        #expect(record.kind == .plaintextError)
        let told = try ErrorMessage(encoded: record.body)
        #expect(told.code == .versionMismatch && told.detail == "customer speaks versions [1]")
        #expect(protocolError { _ = try business.receive(record) } == .unsupportedVersion)
    }

    @Test func infoTamperedInTransitFailsTheHandshake() throws {
        let forged = try ProtocolInfo(versions: [1], capabilities: [.online, .preAuthorization], maximumMessageSize: 4079)
        let business = try Parties.business(info: forged.encoded)
        #expect(protocolError { _ = try Parties.handshake(business: business) } == .handshakeFailed)
    }

    @Test func anUntrustedLedgerKeyIsRefused() throws {
        let rogue = try SigningKey(seed: [UInt8](repeating: 0x66, count: 32))
        let business = try Parties.business(certificate: Parties.certificate(ledger: rogue))
        #expect(protocolError { _ = try Parties.handshake(business: business) } == .invalidCertificate)
    }

    @Test func aCertificateOutsideItsValidityIsRefused() throws {
        let later = Parties.now.adding(milliseconds: 2 * 86_400_000)
        let business = try Parties.business(certificate: Parties.certificate(days: 1))
        #expect(protocolError { _ = try Parties.handshake(business: business, at: later) } == .certificateExpired)
        let future = try Parties.business(certificate: Parties.certificate(validFrom: later))
        #expect(protocolError { _ = try Parties.handshake(business: future) } == .certificateExpired)
    }

    @Test func clocksMayDifferByFiveMinutes() throws {
        let tolerance = MerchantCertificate.clockTolerance
        let soon = try Parties.business(certificate: Parties.certificate(validFrom: Parties.now.adding(milliseconds: tolerance)))
        _ = try Parties.handshake(business: soon)
        let tooSoon = try Parties.business(
            certificate: Parties.certificate(validFrom: Parties.now.adding(milliseconds: tolerance + 1)))
        #expect(protocolError { _ = try Parties.handshake(business: tooSoon) } == .certificateExpired)
        let oneDay = try Parties.business(certificate: Parties.certificate(days: 1))
        _ = try Parties.handshake(business: oneDay, at: Parties.now.adding(milliseconds: 86_400_000 + tolerance))
        #expect(protocolError {
            _ = try Parties.handshake(business: oneDay, at: Parties.now.adding(milliseconds: 86_400_000 + tolerance + 1))
        } == .certificateExpired)
    }

    @Test func aCertificateIsCheckedAgainstItsSignatureAndTheSessionKey() throws {
        let certificate = Parties.certificate()
        let staticKey = Array(Parties.businessStatic.publicKey.rawRepresentation)
        try certificate.verify(trusting: Parties.trusted, at: Parties.now, noiseKey: staticKey)
        let other = Array(Parties.x25519(0x09).publicKey.rawRepresentation)
        #expect(protocolError { try certificate.verify(trusting: Parties.trusted, at: Parties.now, noiseKey: other) }
            == .invalidCertificate)
        let renamed = try MerchantCertificate(
            merchantID: certificate.merchantID, merchantName: "Someone Else", signingKey: certificate.signingKey,
            noiseKey: certificate.noiseKey, validFrom: certificate.validFrom, validUntil: certificate.validUntil,
            ledgerKeyID: certificate.ledgerKeyID, signature: certificate.signature)
        #expect(protocolError { try renamed.verify(trusting: Parties.trusted, at: Parties.now, noiseKey: staticKey) }
            == .invalidCertificate)
        #expect(protocolError { _ = try Parties.business(static: Parties.x25519(0x09), certificate: certificate) }
            == .invalidCertificate)
    }

    @Test func requestsMustBeSignedByTheCertifiedMerchant() throws {
        let (_, _, customer) = try Parties.handshake()
        try customer.verify(Parties.request())
        #expect(protocolError { try customer.verify(Parties.request(signedBy: Parties.deviceKey)) } == .invalidSignature)
        let other = try PaymentRequest(
            paymentID: Sample.paymentID, amount: Sample.request.amount, reference: nil, merchantID: "m_other",
            merchantName: "Other", createdAt: Parties.now, expiresAt: Parties.now.adding(milliseconds: 60_000),
            businessOnline: true, signature: Sample.signature
        ).signed(by: Parties.merchantKey)
        #expect(protocolError { try customer.verify(other) } == .invalidSignature)
        // Signed by the merchant, under its own id, and calling itself something else: the payer would be shown a
        // name the ledger never certified.
        let posing = try PaymentRequest(
            paymentID: Sample.paymentID, amount: Sample.request.amount, reference: nil, merchantID: "m_cafe.42",
            merchantName: "Starbucks", createdAt: Parties.now, expiresAt: Parties.now.adding(milliseconds: 60_000),
            businessOnline: true, signature: Sample.signature
        ).signed(by: Parties.merchantKey)
        #expect(protocolError { try customer.verify(posing) } == .invalidSignature)
    }

    @Test func anAcceptanceIsBoundToItsRequestAndSession() throws {
        let (_, business, customer) = try Parties.handshake()
        let request = Parties.request()
        let acceptance = try customer.accept(
            request, tipMinorUnits: 100, instrumentID: "card-1", delegatedInstrument: false, at: Parties.now,
            preAuthorization: nil, deviceKey: Parties.deviceKey)
        try business.verify(acceptance, of: request)
        // Another payment, or the same one in another session (another handshake), is refused.
        #expect(protocolError { try business.verify(acceptance, of: Parties.request(id: .random())) } == .invalidSignature)
        let freshBusiness = try BusinessHandshake(
            staticKey: Parties.businessStatic, certificate: Parties.certificate(), customerInfo: Parties.info.encoded)
        let (_, otherSession, _) = try Parties.handshake(business: freshBusiness)
        #expect(otherSession.sessionHash != business.sessionHash)
        #expect(protocolError { try otherSession.verify(acceptance, of: request) } == .invalidSignature)
        // A changed tip no longer matches the signature.
        let raised = try PaymentAcceptance(
            paymentID: acceptance.paymentID, amount: acceptance.amount, tipMinorUnits: 10_000,
            instrumentID: acceptance.instrumentID, delegatedInstrument: false, createdAt: acceptance.createdAt,
            requestHash: acceptance.requestHash, sessionHash: acceptance.sessionHash,
            customerKey: acceptance.customerKey, preAuthorization: nil, signature: acceptance.signature)
        #expect(protocolError { try business.verify(raised, of: request) } == .invalidSignature)
    }

    @Test func replayedOrMisplacedRecordsEndTheSession() throws {
        var (records, business, customer) = try Parties.handshake()
        let record = try business.seal(.otherPaid(OtherPaid(paymentID: Sample.paymentID)))
        #expect(try customer.open(record) == .otherPaid(OtherPaid(paymentID: Sample.paymentID)))
        #expect(protocolError { _ = try customer.open(record) } == .decryptionFailed)
        #expect(protocolError { _ = try customer.open(records[2]) } == .unexpectedMessage)
        var altered = try customer.seal(.cancelPayment(CancelPayment(paymentID: Sample.paymentID, reason: .userCancelled)))
        altered = Record(kind: .transport, body: altered.body.enumerated().map { $0 == 5 ? $1 ^ 1 : $1 })
        #expect(protocolError { _ = try business.open(altered) } == .decryptionFailed)
    }

    @Test func handshakeRecordsOutOfOrderAreRefused() throws {
        let (records, _, _) = try Parties.handshake()
        var customer = Parties.customer()
        #expect(protocolError { _ = try customer.receive(records[2], at: Parties.now) } == .unexpectedMessage)
        var business = try Parties.business()
        _ = try business.start()
        #expect(protocolError { _ = try business.receive(records[0]) } == .unexpectedMessage)
        var fresh = Parties.customer()
        let garbage = Record(kind: .handshake1, body: [1, 2, 3])
        #expect(protocolError { _ = try fresh.receive(garbage, at: Parties.now) } == .handshakeFailed)
    }

    @Test func failuresTellThePeerTheRightCode() {
        #expect(ProtocolError(.unsupportedVersion, "").paymentErrorCode == .versionMismatch)
        for code in [ProtocolError.Code.handshakeFailed, .decryptionFailed, .invalidCertificate, .certificateExpired,
            .invalidSignature]
        {
            #expect(ProtocolError(code, "").paymentErrorCode == .securityFailure)
        }
        #expect(ProtocolError(.fragmentOutOfOrder, "").paymentErrorCode == .protocolViolation)
    }
}

/// Arbitrary bytes at every point of a session end it with a typed error, never a crash or a silent success.
@Suite struct SessionPropertyTests {
    @Test func randomRecordsAreRefusedWithTypedErrors() throws {
        var random = SplitMix64(seed: 42)
        let (records, _, established) = try Parties.handshake()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...200, using: &random)
            var body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Half of the cases start from a real record with bytes flipped, to get past the first checks.
            let template = records[Int.random(in: 0..<records.count, using: &random)]
            if Bool.random(using: &random), !template.body.isEmpty {
                body = template.body
                body[Int.random(in: 0..<body.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
            let kind = Record.Kind.allCases.randomElement(using: &random)!
            let record = Record(kind: kind, body: body)
            // Handshake 1 is unauthenticated by design (an ephemeral key and the versions offered): a customer may
            // answer any well-formed one. Everything else must be refused.
            var customer = Parties.customer()
            let refused = protocolError { _ = try customer.receive(record, at: Parties.now) } != nil
            #expect(refused || kind == .handshake1, "customer took \(kind)")
            var business = try Parties.business()
            _ = try business.start()
            #expect(protocolError { _ = try business.receive(record) } != nil, "business took \(kind)")
            var session = established
            #expect(protocolError { _ = try session.open(record) } != nil, "session took \(kind)")
        }
    }
}
