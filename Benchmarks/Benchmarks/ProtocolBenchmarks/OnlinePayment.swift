import BlepayProtocol
import Crypto

/// One complete payment between fresh keys, as it crosses the air: the three handshake records, the request, the
/// acceptance and the result, each tagged with who sends it. Online, the ledger's settled receipt comes back; both
/// offline, the acceptance presents a voucher and the receipt is pending settlement.
enum OnlinePayment {
    static let ledgerKey = SigningKey()
    static let businessStatic = Curve25519.KeyAgreement.PrivateKey()
    static let info = try! ProtocolInfo(versions: BlepayProtocol.versions, capabilities: [.online], maximumMessageSize: 4079)
    static let certificate = try! MerchantCertificate(
        merchantID: "m_cafe.42", merchantName: "Café Zürich", signingKey: Fixtures.merchantKey.publicKey,
        noiseKey: Key32(Array(businessStatic.publicKey.rawRepresentation)), validFrom: Fixtures.created,
        validUntil: Fixtures.created.adding(milliseconds: 86_400_000),
        ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
    ).signed(by: ledgerKey)

    struct Failed: Error {}

    static let voucher = try! PreAuthorizationVoucher(
        voucherID: FixedBytes<Bytes8>(Array(repeating: 7, count: 8)), instrumentID: "card-1",
        customerKey: Fixtures.deviceKey.publicKey, limit: Money(minorUnits: 50_000, currency: Currency("EUR")),
        issuedAt: Fixtures.created.adding(milliseconds: 0), expiresAt: Fixtures.created.adding(milliseconds: 86_400_000),
        ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
    ).signed(by: ledgerKey)

    static func run(offline: Bool = false) throws -> [(fromBusiness: Bool, record: Record)] {
        let now = Fixtures.created
        var business = try BusinessHandshake(
            staticKey: businessStatic, certificate: certificate, customerInfo: info.encoded)
        var customer = CustomerHandshake(
            staticKey: .init(), info: info, trusting: TrustedLedgerKeys([ledgerKey.publicKey]))
        let first = try business.start()
        guard case .reply(let second) = try customer.receive(first, at: now) else { throw Failed() }
        let (third, businessSession) = try business.receive(second)
        guard case .established(let customerSession) = try customer.receive(third, at: now) else { throw Failed() }
        var toCustomer = businessSession, toBusiness = customerSession

        let request = try toCustomer.seal(.paymentRequest(offline ? Fixtures.offlineRequest : Fixtures.request))
        guard case .paymentRequest(let received) = try toBusiness.open(request) else { throw Failed() }
        try toBusiness.verify(received)
        let signed = try toBusiness.accept(
            received, tipMinorUnits: 250, instrumentID: "card-1", delegatedInstrument: false, at: now,
            preAuthorization: offline ? try PreAuthorizationPresentation(voucher: voucher, sequence: 3, spentBeforeMinorUnits: 4_200) : nil,
            deviceKey: Fixtures.deviceKey)
        let acceptance = try toBusiness.seal(.paymentAcceptance(signed))
        guard case .paymentAcceptance(let accepted) = try toCustomer.open(acceptance) else { throw Failed() }
        try toCustomer.verify(accepted, of: received)
        let receipt = offline
            ? try Receipt.pending(received, accepted, at: now, signedBy: Fixtures.merchantKey)
            : try Receipt.settled(received, accepted, transactionID: "tx-0001", at: now, signedBy: ledgerKey)
        let result = try toCustomer.seal(
            .paymentResult(PaymentResult(paymentID: received.paymentID, outcome: .finished(receipt))))
        _ = try toBusiness.open(result)
        return [(true, first), (false, second), (true, third), (true, request), (false, acceptance), (true, result)]
    }

    /// ATT writes plus notifications, and bytes on air with each packet's 3-byte ATT header.
    static func airUse(mtu: Int, offline: Bool = false) throws -> (packets: Int, bytes: Int) {
        var toCustomer = try Fragmenter(mtu: mtu)
        var toBusiness = try Fragmenter(mtu: mtu)
        var packets = 0, bytes = 0
        for (fromBusiness, record) in try run(offline: offline) {
            let fragments = fromBusiness
                ? try toCustomer.fragments(of: record.encoded) : try toBusiness.fragments(of: record.encoded)
            packets += fragments.count
            bytes += fragments.reduce(0) { $0 + $1.count + 3 }
        }
        return (packets, bytes)
    }
}
