import DBusKit

/// The daemons' control API on the system bus (`docs/control-api.md`): names, paths, and how payments, events and
/// errors are spelled in D-Bus values. Interfaces are versioned like BlueZ's: a breaking change is a new `…2`.
public enum ControlAPI {
    public static let customerBusName = "org.blepay.Customer"
    public static let businessBusName = "org.blepay.Business"
    public static let customerInterface = "org.blepay.Customer1"
    public static let businessInterface = "org.blepay.Business1"
    public static let customerPath: DBusObjectPath = "/org/blepay/Customer"
    public static let businessPath: DBusObjectPath = "/org/blepay/Business"
    /// A daemon's well-known name: `org.blepay.Customer`, or `org.blepay.Customer.<instance>` when several
    /// customer daemons share a host (likewise for businesses).
    public static func busName(_ role: DaemonRole, instance: String? = nil) -> String {
        let base = role == .customer ? customerBusName : businessBusName
        return instance.map { "\(base).\($0)" } ?? base
    }

    /// Where a daemon of `role` answers: its bus name, object path and interface.
    public static func address(_ role: DaemonRole, instance: String? = nil)
        -> (name: String, path: DBusObjectPath, interface: String)
    {
        let name = busName(role, instance: instance)
        return role == .customer ? (name, customerPath, customerInterface) : (name, businessPath, businessInterface)
    }

    /// `PaymentEvent(s kind, s payment_id, a{sv} details)`: `ControlEvent`.
    public static let eventSignal = "PaymentEvent"
    public static let eventSignature: DBusSignature = "ssa{sv}"
    package static let eventArgumentNames = ["kind", "payment_id", "details"]
    /// Refusals are `org.blepay.Error.<Code>` (`InsufficientFunds`, `NotFound`, …), the stable code name first in
    /// the message.
    public static let errorPrefix = "org.blepay.Error."

    /// The stable code a refusal's message starts with (`not-found: no such payment` → `not-found`); nil when it
    /// starts with none.
    public static func code(ofRefusal message: String) -> String? {
        let prefix = message.prefix { $0 != ":" }
        let isCode = prefix.count < message.count && !prefix.isEmpty
            && prefix.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "." }
        return isCode ? String(prefix) : nil
    }
}
