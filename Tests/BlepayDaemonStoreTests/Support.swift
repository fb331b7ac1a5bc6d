import BlepayDaemonStore
import BlepayProtocol
import Crypto
import Foundation

/// A ledger key, a device key and vouchers they sign, and a state file in a directory of its own.
struct WalletFixture {
    let ledger = Curve25519.Signing.PrivateKey()
    let device = Curve25519.Signing.PrivateKey()
    let directory: URL
    let now = Timestamp(millisecondsSince1970: 1_800_000_000_000)

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("blepay-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    var path: String { directory.appendingPathComponent(DaemonStore.fileName).path }
    var deviceKey: Key32 { try! Key32(Array(device.publicKey.rawRepresentation)) }
    var ledgerKey: Key32 { try! Key32(Array(ledger.publicKey.rawRepresentation)) }

    func wallet() throws -> VoucherWallet {
        VoucherWallet(store: try DaemonStore(path: path), deviceKey: deviceKey, trusting: TrustedLedgerKeys([ledgerKey]))
    }

    /// A voucher for `limit` minor units of `currency`, valid from an hour ago for `hours` hours.
    func voucher(
        _ limit: UInt64, _ currency: String = "EUR", hours: UInt64 = 24, for customer: Key32? = nil,
        signedBy signer: Curve25519.Signing.PrivateKey? = nil
    ) throws -> PreAuthorizationVoucher {
        let unsigned = try PreAuthorizationVoucher(
            voucherID: FixedBytes((0..<8).map { _ in UInt8.random(in: 0...255) }), instrumentID: "card-1",
            customerKey: customer ?? deviceKey, limit: Money(minorUnits: limit, currency: Currency(currency)),
            issuedAt: Timestamp(millisecondsSince1970: now.millisecondsSince1970 - 3_600_000),
            expiresAt: now.adding(milliseconds: hours * 3_600_000), ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey),
            signature: .unsigned)
        let signature = try (signer ?? ledger).signature(for: unsigned.signingBytes)
        return try PreAuthorizationVoucher(
            voucherID: unsigned.voucherID, instrumentID: unsigned.instrumentID, customerKey: unsigned.customerKey,
            limit: unsigned.limit, issuedAt: unsigned.issuedAt, expiresAt: unsigned.expiresAt,
            ledgerKeyID: unsigned.ledgerKeyID, signature: try Signature64(Array(signature)))
    }

    func later(minutes: UInt64) -> Timestamp { now.adding(milliseconds: minutes * 60_000) }

    /// An offline request for `amount` minor units and this device's plain acceptance of it.
    func pair(_ amount: UInt64, tip: UInt64 = 0, id: PaymentID = .random()) throws -> (PaymentRequest, PaymentAcceptance) {
        let request = try PaymentRequest(
            paymentID: id, amount: eur(amount), reference: nil, merchantID: "m_cafe", merchantName: "Café",
            createdAt: now, expiresAt: later(minutes: 2), businessOnline: false, signature: .unsigned)
        let acceptance = try PaymentAcceptance(
            paymentID: id, amount: eur(amount), tipMinorUnits: tip, instrumentID: "card-1", delegatedInstrument: false,
            createdAt: now, requestHash: try Hash32(Array(repeating: 1, count: 32)),
            sessionHash: try Hash32(Array(repeating: 2, count: 32)), customerKey: deviceKey, preAuthorization: nil,
            signature: .unsigned)
        return (request, acceptance)
    }
}

func eur(_ minorUnits: UInt64) -> Money { try! Money(minorUnits: minorUnits, currency: Currency("EUR")) }
