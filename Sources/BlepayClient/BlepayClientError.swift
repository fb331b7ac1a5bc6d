import BlepayControl
import DBusKit

/// Why a call did not do what was asked, with a stable code: a daemon's refusal keeps its own (`insufficient-funds`,
/// `not-found`, `ledger-offline`, `invalid-arguments`, … as `docs/errors.md` lists them); otherwise
/// `daemon-unreachable` (not running, not answering, or this user may not control it), `bus-unreachable`, or
/// `unexpected-reply` (a daemon of another version).
public struct BlepayClientError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// A failed call as the app sees it.
    init(_ error: DBusError) {
        if let name = error.name, name.hasPrefix(ControlAPI.errorPrefix) {
            self.init(code: ControlAPI.code(ofRefusal: error.message) ?? "refused", message: error.message)
        } else if error.code == .remote || error.code == .timeout || error.code == .disconnected {
            self.init(code: "daemon-unreachable", message: "\(error)")
        } else {
            self.init(code: "unexpected-reply", message: "\(error)")
        }
    }
}
