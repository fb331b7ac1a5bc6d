#if canImport(Glibc)
import Glibc
#endif

/// The hosts that are this machine. Plain HTTP is allowed to them only: nothing sent there crosses a network.
public enum Loopback {
    /// `localhost`, an address in 127.0.0.0/8, or `::1`; an IPv6 address may keep a URL's brackets.
    public static func contains(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) } == Array(repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// Whether `host` is an IP address rather than a name (TLS sends no server name for an address).
    public static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
