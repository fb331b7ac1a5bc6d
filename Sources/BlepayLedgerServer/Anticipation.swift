import BlepayLedgerStore
import BlepayProtocol
import Foundation
import Synchronization

/// A route's pure work done before its write transaction, on the request's own task: the body decoded and the
/// signatures in it checked. Write transactions run one at a time (on SQLite, all on one thread), so what need not
/// be done inside one is not: the operation takes the decoded body and the checked signatures from here, and
/// decodes or verifies again only what is not here. It saves work; it never changes an answer.
struct Anticipation: Sendable {
    var body: (any Sendable)?
    var signatures = CheckedSignatures()

    init() {}

    /// The body decoded as `T` (as `Call.decode` would) and `check`'s signatures of it; nothing if it is not a
    /// `T`, and the operation then reports why.
    init<T: Decodable & Sendable>(decoding body: [UInt8], as _: T.Type, check: (T) -> CheckedSignatures) {
        guard let decoded = try? JSONDecoder().decode(T.self, from: Data(body)) else { return }
        self.body = decoded
        signatures = check(decoded)
    }
}

/// Makes a route's `Anticipation` from the request body and the calling device's signing key, if known.
typealias Anticipate = @Sendable (_ body: [UInt8], _ deviceKey: Key32?) -> Anticipation

/// Devices seen lately, by id, so that a request's MAC can be checked before any costly work without a database
/// read. Only a screen: the request's own transaction loads the device again, and decides.
final class KnownDevices: Sendable {
    private let devices = Mutex<[String: Device]>([:])
    private let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func device(_ id: String) -> Device? { devices.withLock { $0[id] } }

    func remember(_ device: Device) {
        devices.withLock { devices in
            if devices.count >= capacity, devices[device.id] == nil { devices.removeAll(keepingCapacity: true) }
            devices[device.id] = device
        }
    }
}
