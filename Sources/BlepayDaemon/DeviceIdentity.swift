import BlepayConfiguration
import BlepayDaemonConfiguration
import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import Foundation

/// A daemon's keys and ledger credentials, kept in its state directory (mode 0700, every file 0600): the device's
/// Ed25519 signing key and, for a business, its Noise static key, created on first start; and what the ledger
/// issued when the device enrolled with its account's enrollment token.
public struct DeviceIdentity: Sendable {
    /// What the ledger issued at enrollment (`credentials.json`).
    public struct Credentials: Codable, Sendable, Hashable {
        public let deviceId: String
        public let accountId: String
        /// The HMAC-SHA256 request secret, base64.
        public let secret: String
        /// Business: the merchant certificate, base64.
        public let certificate: String?
    }

    public let signingKey: SigningKey
    public let noiseKey: Curve25519.KeyAgreement.PrivateKey?
    public let credentials: Credentials
    /// Business: the merchant certificate, checked against the configured ledger keys and our keys. It may have
    /// expired (while the ledger could not be reached to renew it): `CertificateRenewal` renews it once it answers.
    public let certificate: MerchantCertificate?

    static let signingKeyFile = "device-signing.key"
    static let noiseKeyFile = "device-noise.key"
    static let credentialsFile = "credentials.json"

    /// Loads the keys (creating them on first start) and the credentials, enrolling first if there are none yet.
    /// `ledger` should keep its idempotency keys in the state directory, so that an enrollment interrupted by a
    /// crash is answered, when retried, with the device it created.
    public static func prepare(
        _ configuration: DaemonConfiguration, ledger: LedgerClient
    ) async throws(DaemonError) -> DeviceIdentity
    {
        let directory = configuration.stateDirectory
        let signingKey: SigningKey
        var noiseKey: Curve25519.KeyAgreement.PrivateKey?
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
            signingKey = try SigningKey(seed: SecretFile.loadOrCreate(configuration.resolve(signingKeyFile)) {
                SigningKey().seed
            })
            if configuration.role == .business {
                noiseKey = try Curve25519.KeyAgreement.PrivateKey(
                    rawRepresentation: SecretFile.loadOrCreate(configuration.resolve(noiseKeyFile)) {
                        Array(Curve25519.KeyAgreement.PrivateKey().rawRepresentation)
                    })
            }
        } catch {
            throw DaemonError(.stateUnusable, "\(directory): \(error)")
        }
        let credentials = try await loadOrEnroll(configuration, ledger: ledger, signingKey: signingKey, noiseKey: noiseKey)
        let certificate = try configuration.role == .business
            ? readCertificate(credentials, configuration: configuration, signingKey: signingKey, noiseKey: noiseKey)
            : nil
        return DeviceIdentity(signingKey: signingKey, noiseKey: noiseKey, credentials: credentials, certificate: certificate)
    }

    /// The device's HMAC credentials for the ledger client.
    public var ledgerCredentials: LedgerClient.Credentials {
        .device(id: credentials.deviceId, secret: SymmetricKey(data: Data(base64Encoded: credentials.secret) ?? Data()))
    }

    private static func loadOrEnroll(
        _ configuration: DaemonConfiguration, ledger: LedgerClient, signingKey: SigningKey,
        noiseKey: Curve25519.KeyAgreement.PrivateKey?
    ) async throws(DaemonError) -> Credentials {
        let path = configuration.resolve(credentialsFile)
        if FileManager.default.fileExists(atPath: path) { return try decode(path) }
        let token: String
        let tokenFile = configuration.resolve(configuration.enrollmentTokenFile)
        do {
            let bytes = try SecretFile.load(tokenFile)
            token = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw DaemonError(.enrollmentFailed, "not enrolled yet, and the enrollment token cannot be used: \(error)")
        }
        let request = RegisterDevice(
            name: configuration.deviceName, signingKey: signingKey.publicKey.bytes.hex,
            noiseKey: noiseKey.map { Array($0.publicKey.rawRepresentation).hex })
        let device: DeviceResource
        do {
            device = try await ledger.with(.bearer(token)).enroll(request)
        } catch {
            throw DaemonError(.enrollmentFailed, "registering the device with the ledger failed: \(error)")
        }
        guard let secret = device.secret else {
            throw DaemonError(.enrollmentFailed, "the ledger issued no request secret")
        }
        let credentials = Credentials(
            deviceId: device.id, accountId: device.accountId, secret: secret, certificate: device.certificate)
        do {
            _ = try SecretFile.loadOrCreate(path) { (try? LedgerClient.encode(credentials)) ?? [] }
        } catch {
            throw DaemonError(.stateUnusable, "cannot keep the credentials: \(error)")
        }
        ledger.enrolled(request)
        // The token is spent: nothing of it is left to find on this disk (a file outside the state directory, which
        // the unit cannot write, stays for the operator to remove).
        try? FileManager.default.removeItem(atPath: tokenFile)
        return try decode(path)
    }

    private static func decode(_ path: String) throws(DaemonError) -> Credentials {
        do {
            return try JSONDecoder().decode(Credentials.self, from: Data(SecretFile.load(path)))
        } catch {
            throw DaemonError(.stateUnusable, "\(path) holds no credentials: \(error)")
        }
    }

    private static func readCertificate(
        _ credentials: Credentials, configuration: DaemonConfiguration, signingKey: SigningKey,
        noiseKey: Curve25519.KeyAgreement.PrivateKey?
    ) throws(DaemonError) -> MerchantCertificate {
        guard let text = credentials.certificate, let bytes = Data(base64Encoded: text),
            let certificate = try? MerchantCertificate(encoded: [UInt8](bytes)), let noiseKey
        else { throw DaemonError(.certificateInvalid, "the ledger issued no readable merchant certificate") }
        try check(
            certificate, trusting: TrustedLedgerKeys(configuration.ledgerPublicKeys), signingKey: signingKey.publicKey,
            noiseKey: Key32(publicKeyOf: noiseKey))
        return certificate
    }

    /// Checks that `certificate` is this device's: signed by a trusted ledger key, for its signing and Noise keys.
    /// Its validity window is not checked here: an expired certificate is still the device's, to be renewed.
    static func check(_ certificate: MerchantCertificate, trusting ledgerKeys: TrustedLedgerKeys, signingKey: Key32,
        noiseKey: Key32) throws(DaemonError)
    {
        do {
            // Checked as at its own start, so that the window always holds and only the signature and keys count.
            try certificate.verify(trusting: ledgerKeys, at: certificate.validFrom, noiseKey: noiseKey.bytes)
        } catch {
            throw DaemonError(.certificateInvalid, "\(error)")
        }
        guard certificate.signingKey == signingKey else {
            throw DaemonError(.certificateInvalid, "the certificate vouches for another signing key than this device's")
        }
    }

    /// Keeps `certificate` as the device's in `credentials.json`, replacing the file whole: a crash leaves the old
    /// credentials or the new ones, never neither.
    static func keep(_ certificate: MerchantCertificate, in credentials: Credentials, path: String) throws(DaemonError) {
        let renewed = Credentials(
            deviceId: credentials.deviceId, accountId: credentials.accountId, secret: credentials.secret,
            certificate: Data(certificate.encoded).base64EncodedString())
        do {
            try SecretFile.replace(path, with: LedgerClient.encode(renewed))
        } catch {
            throw DaemonError(.stateUnusable, "cannot keep the renewed certificate: \(error)")
        }
    }
}

extension Key32 {
    /// A Noise public key as certificates carry it.
    init(publicKeyOf key: Curve25519.KeyAgreement.PrivateKey) {
        try! self.init(Array(key.publicKey.rawRepresentation))
    }
}

// Descriptions name the device and never show its keys or request secret: service lifecycle logs the services it
// runs, with everything they hold, as they describe themselves.
extension DeviceIdentity: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "DeviceIdentity(device: \(credentials.deviceId), account: \(credentials.accountId))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["credentials": credentials]) }
}

extension DeviceIdentity.Credentials: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "Credentials(device: \(deviceId), account: \(accountId))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["deviceId": deviceId, "accountId": accountId]) }
}
