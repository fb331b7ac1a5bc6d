import CBluetooth
import Foundation

/// The socket calls listeners and channels share; each returns an open descriptor or throws, closing what it opened.
enum Socket {
    /// LE PSMs a server may take for itself (Core 5.3 Vol 3 Part A §4.22: 0x0080–0x00FF are dynamic).
    static let dynamicPSMs: ClosedRange<UInt16> = 0x0080...0x00FF

    static func addressType(_ kind: L2CAPAddress.Kind) -> UInt8 {
        UInt8(kind == .lePublic ? CBT_BDADDR_LE_PUBLIC : CBT_BDADDR_LE_RANDOM)
    }

    /// A non-blocking socket bound to `local` and `psm`, taking SDUs of up to `receiveMTU` bytes, without pairing.
    static func bound(_ local: L2CAPAddress, psm: UInt16, receiveMTU: Int) throws(L2CAPError) -> CInt {
        guard (23...65535).contains(receiveMTU) else {
            throw L2CAPError(.invalidArgument, "a receive MTU of \(receiveMTU): LE channels take 23 to 65535")
        }
        let fd = cbt_l2cap_socket()
        guard fd >= 0 else { throw .system(.unavailable, "socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)") }
        do throws(L2CAPError) {
            guard cbt_set_low_security(fd) == 0 else { throw .system(.listenFailed, "setsockopt(BT_SECURITY)") }
            guard cbt_l2cap_bind(fd, local.address, addressType(local.kind), psm) == 0 else {
                throw .system(errno == EINVAL ? .invalidArgument : .listenFailed, "bind(\(local), PSM \(psm))")
            }
            // After bind: the kernel takes BT_RCVMTU only once the socket has an LE address type.
            guard cbt_set_receive_mtu(fd, UInt16(receiveMTU)) == 0 else {
                throw .system(.listenFailed, "setsockopt(BT_RCVMTU)")
            }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// A listening socket on `local` at `psm`, or with `psm` 0 at a dynamic LE PSM the kernel picks (Linux picks from
    /// 0x0080–0x00FF for an LE address, with no privilege needed).
    static func listening(_ local: L2CAPAddress, psm: UInt16, receiveMTU: Int) throws(L2CAPError)
        -> (fd: CInt, psm: UInt16)
    {
        let fd = try listen(bound(local, psm: psm, receiveMTU: receiveMTU))
        let bound = cbt_l2cap_bound_psm(fd)
        guard bound > 0, psm == 0 ? dynamicPSMs.contains(UInt16(bound)) : UInt16(bound) == psm else {
            close(fd)
            throw L2CAPError(.listenFailed, "the socket is bound to PSM \(bound), not an LE PSM")
        }
        return (fd, UInt16(bound))
    }

    private static func listen(_ fd: CInt) throws(L2CAPError) -> CInt {
        guard Glibc.listen(fd, 4) == 0 else {
            let error = L2CAPError.system(.listenFailed, "listen")
            close(fd)
            throw error
        }
        return fd
    }

    /// The MTUs of a connected channel.
    static func mtus(_ fd: CInt) throws(L2CAPError) -> (receive: Int, send: Int) {
        var receive: UInt16 = 0
        var send: UInt16 = 0
        guard cbt_mtus(fd, &receive, &send) == 0 else { throw .system(.connectFailed, "getsockopt(BT_RCVMTU, BT_SNDMTU)") }
        return (Int(receive), Int(send))
    }

    /// Wakes a thread sleeping in poll() on `fd`.
    static func wake(_ fd: CInt) {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    static func drain(_ fd: CInt) {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }

    static func pollFD(_ fd: CInt, _ events: Int32) -> pollfd {
        pollfd(fd: fd, events: Int16(events), revents: 0)
    }
}
