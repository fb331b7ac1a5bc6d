/// Delivers incoming signals to the subscriptions whose rules match them, tracking the owners of the
/// well-known names that rules name as sender. Used only on the loop thread, hence unchecked.
final class SignalRouter: @unchecked Sendable {
    private struct Subscription {
        let rules: [DBusMatchRule]
        let keep: @Sendable (DBusMessage) -> Bool
        let continuation: AsyncStream<DBusMessage>.Continuation
    }

    private var subscriptions: [UInt64: Subscription] = [:]
    /// Current owners (unique names) of tracked well-known names; absent while unowned.
    private var owners: [String: String] = [:]
    private(set) var trackedNames: Set<String> = []

    func add(
        _ id: UInt64, rules: [DBusMatchRule], keep: @escaping @Sendable (DBusMessage) -> Bool,
        continuation: AsyncStream<DBusMessage>.Continuation
    ) {
        subscriptions[id] = Subscription(rules: rules, keep: keep, continuation: continuation)
    }

    func remove(_ id: UInt64) -> [DBusMatchRule] {
        subscriptions.removeValue(forKey: id)?.rules ?? []
    }

    /// Returns false when `name` was tracked already.
    func track(_ name: String) -> Bool { trackedNames.insert(name).inserted }

    func setOwner(_ owner: String?, of name: String) {
        owners[name] = owner.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Routes one signal; returns whether it was a signal (signals are always consumed here).
    func route(_ message: DBusMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if message.sender == "org.freedesktop.DBus", message.member == "NameOwnerChanged",
            message.arguments.count == 3, case .string(let name) = message.arguments[0], trackedNames.contains(name),
            case .string(let newOwner) = message.arguments[2]
        {
            setOwner(newOwner, of: name)
        }
        for subscription in subscriptions.values
        where subscription.rules.contains(where: { $0.matches(message, senderOwner: $0.wellKnownSender.flatMap { owners[$0] }) })
            && subscription.keep(message)
        {
            subscription.continuation.yield(message)
        }
        return true
    }

    func finishAll() {
        for subscription in subscriptions.values { subscription.continuation.finish() }
        subscriptions.removeAll()
    }
}
