// libdbus-1 for Swift: the header plus the macros Swift cannot import, re-exported as constants.
#ifndef BLEPAY_CDBUS_SHIM_H
#define BLEPAY_CDBUS_SHIM_H

#include <dbus/dbus.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// A non-blocking eventfd that wakes the connection's thread.
static inline int cdbus_wakeup_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

/// Names the calling thread for the kernel (15 bytes kept); prctl is variadic, which Swift cannot call.
static inline void cdbus_name_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }

static const int CDBUS_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CDBUS_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CDBUS_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CDBUS_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CDBUS_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CDBUS_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CDBUS_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CDBUS_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CDBUS_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CDBUS_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CDBUS_TYPE_STRING = DBUS_TYPE_STRING;
static const int CDBUS_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CDBUS_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CDBUS_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int CDBUS_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CDBUS_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CDBUS_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CDBUS_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

static const int CDBUS_MESSAGE_TYPE_METHOD_CALL = DBUS_MESSAGE_TYPE_METHOD_CALL;
static const int CDBUS_MESSAGE_TYPE_METHOD_RETURN = DBUS_MESSAGE_TYPE_METHOD_RETURN;
static const int CDBUS_MESSAGE_TYPE_ERROR = DBUS_MESSAGE_TYPE_ERROR;
static const int CDBUS_MESSAGE_TYPE_SIGNAL = DBUS_MESSAGE_TYPE_SIGNAL;

static const int CDBUS_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;

static const char *const CDBUS_INTERFACE_LOCAL = DBUS_INTERFACE_LOCAL;
static const char *const CDBUS_ERROR_UNKNOWN_METHOD = DBUS_ERROR_UNKNOWN_METHOD;
static const char *const CDBUS_ERROR_UNKNOWN_OBJECT = DBUS_ERROR_UNKNOWN_OBJECT;
static const char *const CDBUS_ERROR_UNKNOWN_INTERFACE = DBUS_ERROR_UNKNOWN_INTERFACE;
static const char *const CDBUS_ERROR_UNKNOWN_PROPERTY = DBUS_ERROR_UNKNOWN_PROPERTY;
static const char *const CDBUS_ERROR_PROPERTY_READ_ONLY = DBUS_ERROR_PROPERTY_READ_ONLY;
static const char *const CDBUS_ERROR_INVALID_ARGS = DBUS_ERROR_INVALID_ARGS;
static const char *const CDBUS_ERROR_FAILED = DBUS_ERROR_FAILED;
static const char *const CDBUS_ERROR_NO_REPLY = DBUS_ERROR_NO_REPLY;

#endif
