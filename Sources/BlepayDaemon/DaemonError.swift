/// Why a daemon cannot start or go on, with a stable code; the detail never carries a secret.
public struct DaemonError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The state directory, a key file or the stored credentials cannot be used.
        case stateUnusable = "daemon.state-unusable"
        /// The state file's schema is newer than this build's, or migrating it failed (it was left as it was).
        case stateSchema = "daemon.state-schema"
        /// Not enrolled yet, and enrolling with the token failed (no token file, refused, ledger unreachable).
        case enrollmentFailed = "daemon.enrollment-failed"
        /// The merchant certificate is missing, or not signed by a configured ledger key for our keys.
        case certificateInvalid = "daemon.certificate-invalid"
        /// The ledger did not renew the merchant certificate (unreachable, or it refused); the one held stays.
        case certificateNotRenewed = "daemon.certificate-not-renewed"
        /// The adapter is missing, or BlueZ refused what the daemon needs from it.
        case bluetoothUnavailable = "daemon.bluetooth-unavailable"
        /// The metrics port cannot be listened on (another process holds it).
        case metricsUnavailable = "daemon.metrics-unavailable"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
