// libbluetooth's L2CAP socket API for Swift: the headers plus small helpers for what Swift cannot import (the
// sockaddr_l2 with its byte-order macros, the BT_* socket options).
#ifndef BLEPAY_CBLUETOOTH_SHIM_H
#define BLEPAY_CBLUETOOTH_SHIM_H

#include <bluetooth/bluetooth.h>
#include <bluetooth/l2cap.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

static const int CBT_BDADDR_LE_PUBLIC = BDADDR_LE_PUBLIC;
static const int CBT_BDADDR_LE_RANDOM = BDADDR_LE_RANDOM;
static const int CBT_BT_SECURITY_LOW = BT_SECURITY_LOW;

/// A non-blocking eventfd that wakes a channel's or listener's thread.
static inline int cbt_wake_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// Names the calling thread for the kernel (15 bytes kept): Foundation's `Thread.name` does not reach it on Linux.
static inline void cbt_name_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }

/// A non-blocking L2CAP SOCK_SEQPACKET socket: one send is one SDU. -1 with errno on failure (EAFNOSUPPORT on a
/// kernel without Bluetooth).
static inline int cbt_l2cap_socket(void) {
    return socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_L2CAP);
}

static inline int cbt_l2cap_address(struct sockaddr_l2 *sa, const char *address, uint8_t type, uint16_t psm) {
    memset(sa, 0, sizeof *sa);
    sa->l2_family = AF_BLUETOOTH;
    sa->l2_psm = htobs(psm);
    sa->l2_bdaddr_type = type;
    if (str2ba(address, &sa->l2_bdaddr) < 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

/// Binds to an adapter's address (LE, `type`) and `psm`; PSM 0 lets the kernel choose a dynamic LE PSM.
static inline int cbt_l2cap_bind(int fd, const char *address, uint8_t type, uint16_t psm) {
    struct sockaddr_l2 sa;
    if (cbt_l2cap_address(&sa, address, type, psm) < 0) return -1;
    return bind(fd, (struct sockaddr *)&sa, sizeof sa);
}

/// Starts connecting to `psm` on a peer; -1 with errno EINPROGRESS while the connection is being made.
static inline int cbt_l2cap_connect(int fd, const char *address, uint8_t type, uint16_t psm) {
    struct sockaddr_l2 sa;
    if (cbt_l2cap_address(&sa, address, type, psm) < 0) return -1;
    return connect(fd, (struct sockaddr *)&sa, sizeof sa);
}

/// The PSM a socket is bound to (the kernel's choice after binding PSM 0); -1 with errno on failure.
static inline int cbt_l2cap_bound_psm(int fd) {
    struct sockaddr_l2 sa;
    socklen_t length = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &length) < 0) return -1;
    return btohs(sa.l2_psm);
}

/// Accepts a channel as a non-blocking socket, with the peer's address ("XX:XX:…", 18 bytes) and address type.
static inline int cbt_l2cap_accept(int fd, char address[18], uint8_t *type) {
    struct sockaddr_l2 sa;
    socklen_t length = sizeof sa;
    memset(&sa, 0, sizeof sa);
    int channel = accept4(fd, (struct sockaddr *)&sa, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (channel < 0) return -1;
    ba2str(&sa.l2_bdaddr, address);
    *type = sa.l2_bdaddr_type;
    return channel;
}

/// The session encrypts everything itself, so the link needs no pairing.
static inline int cbt_set_low_security(int fd) {
    struct bt_security security;
    memset(&security, 0, sizeof security);
    security.level = BT_SECURITY_LOW;
    return setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &security, sizeof security);
}

/// The largest SDU this end takes; set after binding (an LE address type) and before listening or connecting
/// (accepted channels inherit it).
static inline int cbt_set_receive_mtu(int fd, uint16_t mtu) {
    return setsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, sizeof mtu);
}

/// The channel's receive and send MTUs once connected.
static inline int cbt_mtus(int fd, uint16_t *receive, uint16_t *send) {
    socklen_t length = sizeof *receive;
    if (getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, receive, &length) < 0) return -1;
    length = sizeof *send;
    return getsockopt(fd, SOL_BLUETOOTH, BT_SNDMTU, send, &length);
}

/// The outcome of a non-blocking connect (0 or an errno).
static inline int cbt_socket_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return errno;
    return error;
}

#endif
