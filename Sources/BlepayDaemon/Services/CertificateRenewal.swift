import BlepayDaemonConfiguration
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Logging
import Synchronization

/// The business's merchant certificate, renewed before it expires: once less than a third of its lifetime is left
/// (or it has expired), the ledger is asked for a fresh one for the device's registered keys. A certificate the
/// ledger returns is checked like the one enrolled (a trusted ledger key, this device's keys), kept in
/// `credentials.json` (replaced whole), and only then presented, from the next handshake on, without a restart.
///
/// A failure is retried after a wait that doubles from 30 s up to an hour, logged at warning; once the
/// certificate has expired the wait stays at 30 s and failures are logged at error, so that the business is
/// renewed soon after the ledger answers. Meanwhile it keeps presenting the expired certificate, which customers
/// refuse: it takes no payment, but its control API and the settlement of what it took offline go on.
public final class CertificateRenewal: Sendable {
    /// What one call did.
    public enum Outcome: Sendable, Hashable {
        /// Nothing to do before then.
        case notDue(until: Timestamp)
        /// Another call is renewing.
        case busy
        /// An earlier failure is waited out until then; nothing was asked.
        case backingOff(until: Timestamp)
        case renewed(MerchantCertificate)
        /// Nothing was renewed, and nothing is tried again before `retryAt`.
        case failed(DaemonError, retryAt: Timestamp)
        /// The daemon stopped while asking: not a failure, and nothing waits for it.
        case stopped
    }

    /// How often the certificate is looked at while the daemon runs.
    public static let checkInterval: Duration = .seconds(30)
    static let firstWaitMilliseconds: UInt64 = 30_000
    static let longestWaitMilliseconds: UInt64 = 3_600_000

    private let presented: PresentedCertificate
    private let credentials: DeviceIdentity.Credentials
    private let credentialsPath: String
    private let signingKey: Key32
    private let noiseKey: Key32
    private let trusted: TrustedLedgerKeys
    private let ledger: LedgerClient
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private let state = Mutex<(renewing: Bool, failures: Int, retryAt: Timestamp?)>((false, 0, nil))

    /// Renews what `presented` holds for the device `identity` of `configuration`, through `ledger` (signing as
    /// the device), trusting `trusted`.
    public init(
        presenting presented: PresentedCertificate, identity: DeviceIdentity, configuration: DaemonConfiguration,
        ledger: LedgerClient, trusted: TrustedLedgerKeys, clock: @escaping @Sendable () -> Timestamp, logger: Logger
    ) throws(DaemonError) {
        guard let noiseKey = identity.noiseKey else {
            throw DaemonError(.certificateInvalid, "a business needs its Noise key")
        }
        self.presented = presented
        credentials = identity.credentials
        credentialsPath = configuration.resolve(DeviceIdentity.credentialsFile)
        signingKey = identity.signingKey.publicKey
        self.noiseKey = Key32(publicKeyOf: noiseKey)
        self.trusted = trusted
        self.ledger = ledger
        self.clock = clock
        self.logger = logger
    }

    /// When a certificate is due for renewal: two thirds into its lifetime.
    public static func renewalTime(of certificate: MerchantCertificate) -> Timestamp {
        let (from, until) = (certificate.validFrom.millisecondsSince1970, certificate.validUntil.millisecondsSince1970)
        return Timestamp(millisecondsSince1970: until - (until > from ? (until - from) / 3 : 0))
    }

    /// Renews the certificate if it is due and no failure is being waited out.
    public func renewIfDue() async -> Outcome {
        let now = clock()
        let current = presented.current
        let due = Self.renewalTime(of: current)
        let refused = state.withLock { state -> Outcome? in
            if state.renewing { return .busy }
            if now < due { return .notDue(until: due) }
            if let retryAt = state.retryAt, now < retryAt { return .backingOff(until: retryAt) }
            state.renewing = true
            return nil
        }
        if let refused { return refused }
        defer { state.withLock { $0.renewing = false } }
        do throws(DaemonError) {
            let renewed = try await renew()
            state.withLock { state in (state.failures, state.retryAt) = (0, nil) }
            logger.info("merchant certificate renewed", metadata: [
                "valid_until": "\(renewed.validUntil)", "ledger_key": "\(renewed.ledgerKeyID)",
            ])
            return .renewed(renewed)
        } catch {
            if Task.isCancelled { return .stopped }
            return failed(error, expired: Self.hasExpired(current, at: now))
        }
    }

    /// Whether customers refuse `certificate` at `now`, past its window and the clock tolerance they allow.
    static func hasExpired(_ certificate: MerchantCertificate, at now: Timestamp) -> Bool {
        now.millisecondsSince1970 > certificate.validUntil.millisecondsSince1970 + MerchantCertificate.clockTolerance
    }

    /// Asks, checks, keeps, then presents.
    private func renew() async throws(DaemonError) -> MerchantCertificate {
        let certificate: MerchantCertificate
        do throws(LedgerClientError) {
            certificate = try await ledger.renewCertificate()
        } catch {
            throw DaemonError(.certificateNotRenewed, "\(error)")
        }
        try DeviceIdentity.check(certificate, trusting: trusted, signingKey: signingKey, noiseKey: noiseKey)
        try DeviceIdentity.keep(certificate, in: credentials, path: credentialsPath)
        presented.replace(with: certificate)
        return certificate
    }

    private func failed(_ error: DaemonError, expired: Bool) -> Outcome {
        let failedAt = clock()
        let (wait, retryAt) = state.withLock { state in
            state.failures += 1
            let wait = expired
                ? Self.firstWaitMilliseconds
                : min(Self.firstWaitMilliseconds << min(state.failures - 1, 16), Self.longestWaitMilliseconds)
            let retryAt = failedAt.adding(milliseconds: wait)
            state.retryAt = retryAt
            return (wait, retryAt)
        }
        let metadata: Logger.Metadata = ["error": "\(error.code.rawValue)", "retry_in_seconds": "\(wait / 1000)"]
        if expired {
            logger.error("the merchant certificate has expired and was not renewed; customers refuse it", metadata: metadata)
        } else {
            logger.warning("the merchant certificate was not renewed", metadata: metadata)
        }
        return .failed(error, retryAt: retryAt)
    }
}
