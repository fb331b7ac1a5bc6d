/// The daemons' control API as both ends of the bus see it: bus names, paths, the interfaces' methods and signal,
/// and the typed values they carry. What `blepayd` serves and `blepayctl` or an app calls; no daemon machinery, so a
/// client links only this, DBusKit and the protocol's value types.

/// Which daemon: the customer's or the business's.
public enum DaemonRole: String, Sendable, Hashable, CaseIterable {
    case customer, business
}
