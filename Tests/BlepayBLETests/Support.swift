import BlepayPayments
import BlepayProtocol
import BlueZ
import BlueZTestSupport
import Crypto
import DBusKit
import DBusTestSupport
import Foundation
import Logging
import Synchronization
import TestSupport

/// Warnings only; `BLEPAY_TEST_LOG=debug` (or another level) follows a test more closely.
let testLogger: Logger = {
    var logger = Logger(label: "blepay.ble.test")
    logger.logLevel = ProcessInfo.processInfo.environment["BLEPAY_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
    return logger
}()

/// The wall clock, as the transports and links check certificates against it.
@Sendable func wallClock() -> Timestamp {
    Timestamp(millisecondsSince1970: UInt64(Date().timeIntervalSince1970 * 1000))
}

/// A merchant enrolled with a ledger of the test's own: the ledger key signs the certificate that vouches for
/// the business's Noise key, and customers trust that ledger key.
struct Merchant: Sendable {
    let staticKey = Curve25519.KeyAgreement.PrivateKey()
    let signingKey = SigningKey()
    let ledgerKey = SigningKey()
    let certificate: MerchantCertificate
    let trustedLedgerKeys: TrustedLedgerKeys

    init() throws {
        let now = wallClock()
        certificate = try Self.certificate(
            signingKey: signingKey, staticKey: staticKey, ledgerKey: ledgerKey,
            validFrom: Timestamp(millisecondsSince1970: now.millisecondsSince1970 - 3_600_000))
        trustedLedgerKeys = TrustedLedgerKeys([ledgerKey.publicKey])
    }

    /// Another certificate for the same keys, valid for two hours from `validFrom`, as a renewal issues it.
    func certificate(validFrom: Timestamp) throws -> MerchantCertificate {
        try Self.certificate(signingKey: signingKey, staticKey: staticKey, ledgerKey: ledgerKey, validFrom: validFrom)
    }

    private static func certificate(
        signingKey: SigningKey, staticKey: Curve25519.KeyAgreement.PrivateKey, ledgerKey: SigningKey, validFrom: Timestamp
    ) throws -> MerchantCertificate {
        try MerchantCertificate(
            merchantID: "m_cafe", merchantName: "Café", signingKey: signingKey.publicKey,
            noiseKey: Key32(Array(staticKey.publicKey.rawRepresentation)),
            validFrom: validFrom, validUntil: validFrom.adding(milliseconds: 7_200_000),
            ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned
        ).signed(by: ledgerKey)
    }

    /// A request of this merchant's, signed as the business signs it.
    func request() throws -> PaymentRequest {
        let now = wallClock()
        return try PaymentRequest(
            paymentID: .random(), amount: Money(minorUnits: 2550, currency: Currency("EUR")), reference: "table 4",
            merchantID: certificate.merchantID, merchantName: certificate.merchantName, createdAt: now,
            expiresAt: now.adding(milliseconds: 120_000), businessOnline: true, signature: .unsigned
        ).signed(by: signingKey)
    }
}

/// A private bus with the bluetoothd stand-in on it (hci0 and hci1) and a BlueZ session for the transport under
/// test. bluetoothd can be restarted: the stand-in leaves the bus and a new one takes its name.
final class BLEFixture: Sendable {
    let bus: TestBus
    let session: BlueZSession
    let adapter: Adapter
    private let current: Mutex<FakeBluetoothd>

    var bluetoothd: FakeBluetoothd { current.withLock { $0 } }

    init() async throws {
        bus = try TestBus()
        let bluetoothd = try await FakeBluetoothd(bus: bus)
        current = Mutex(bluetoothd)
        session = try await BlueZSession.connect(to: .address(bus.address), logger: testLogger)
        adapter = try session.adapter(named: "hci0")
    }

    /// bluetoothd stops and starts again: the new one knows nothing, and its adapters come up unpowered.
    func restartBluetoothd() async throws -> FakeBluetoothd {
        bluetoothd.stop()
        let restarted = try await FakeBluetoothd(bus: bus)
        current.withLock { $0 = restarted }
        return restarted
    }

    /// Stops the transport's `run` and everything else. The session closes first, so that the transport's BlueZ
    /// subscriptions end by themselves rather than by cancellation: cancelling one while `BlueZSession` hands out
    /// bluetoothd's signals can deadlock it (it hands them out under the lock a subscription's end takes).
    func stop(_ run: Task<Void, any Error>) {
        session.close()
        run.cancel()
        bluetoothd.stop()
        bus.stop()
    }
}

/// Runs a transport's `run` in a task until the test stops it, and returns once the transport says it is ready.
func running(_ run: @escaping @Sendable (@escaping @Sendable () -> Void) async throws -> Void) async throws
    -> Task<Void, any Error>
{
    let (ready, signal) = AsyncStream<Void>.makeStream()
    let task = Task { try await run { signal.yield() } }
    try await next("the transport to be ready", in: ready) { $0 }
    return task
}

/// The first element of `stream` that `match` maps to a value; the elements before it are dropped.
@discardableResult
func next<Element: Sendable, T: Sendable>(
    _ what: String, in stream: AsyncStream<Element>, within limit: Duration = .seconds(5),
    _ match: @escaping @Sendable (Element) -> T?
) async throws -> T {
    try await within(limit, what) {
        for await element in stream {
            if let value = match(element) { return value }
        }
        throw TimedOut(what: "\(what) (the stream ended)")
    }
}

extension TransportEvent {
    var connected: (PeerID, PeerSession)? {
        if case .connected(let peer, let session) = self { (peer, session) } else { nil }
    }

    var received: (PeerID, Message)? {
        if case .received(let peer, let message) = self { (peer, message) } else { nil }
    }

    var disconnected: PeerID? {
        if case .disconnected(let peer) = self { peer } else { nil }
    }
}

/// The ephemeral id in an advertisement blepay registered.
func ephemeralID(of advertisement: FakeBluetoothd.Registration) -> FixedBytes<Bytes8>? {
    guard case .dictionary(_, _, let entries)? = advertisement.advertisement["ServiceData"],
        let entry = entries.first(where: { $0.key == .string(GattLayout.service) }),
        case .bytes(let data) = entry.value.unwrapped
    else { return nil }
    return try? AdvertisementData(encoded: data).ephemeralID
}
