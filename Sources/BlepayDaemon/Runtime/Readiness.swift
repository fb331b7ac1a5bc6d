import Synchronization

/// Calls `ready` once, when every named part has reported: systemd hears READY=1 only after the bus name and the
/// BLE side (advertisement and GATT application, or the scanner) are registered.
final class Readiness: Sendable {
    private let waiting: Mutex<Set<String>?>
    private let ready: @Sendable () -> Void

    init(_ parts: Set<String>, ready: @escaping @Sendable () -> Void) {
        waiting = Mutex(parts)
        self.ready = ready
    }

    func report(_ part: String) {
        let done = waiting.withLock { waiting -> Bool in
            guard waiting != nil else { return false }
            waiting!.remove(part)
            guard waiting!.isEmpty else { return false }
            waiting = nil
            return true
        }
        if done { ready() }
    }
}
