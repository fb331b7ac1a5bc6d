import BlueZ
import DBusKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct BlueZErrorTests {
    static let names: [(String, BlueZError.Code)] = [
        ("Failed", .failed), ("InProgress", .inProgress), ("AlreadyConnected", .alreadyConnected),
        ("AlreadyExists", .alreadyExists), ("NotReady", .notReady), ("NotConnected", .notConnected),
        ("NotPermitted", .notPermitted), ("NotAuthorized", .notAuthorized), ("NotSupported", .notSupported),
        ("NotAvailable", .notAvailable), ("DoesNotExist", .doesNotExist), ("InvalidArguments", .invalidArguments),
        ("InvalidValueLength", .invalidValueLength), ("InvalidOffset", .invalidOffset),
        ("AuthenticationFailed", .authenticationFailed), ("ConnectionAttemptFailed", .connectionAttemptFailed),
        ("SomethingNew", .other),
    ]

    @Test(arguments: names)
    func bluezErrorNamesMapToCodes(_ name: String, _ code: BlueZError.Code) {
        let error = BlueZError(DBusError.reply(name: "org.bluez.Error.\(name)", "le-connection-abort-by-local"))
        #expect(error.code == code)
        #expect(error.dbusName == "org.bluez.Error.\(name)")
        #expect(error.message == "le-connection-abort-by-local")
    }

    @Test func transportErrorsMapToOurCodes() {
        #expect(BlueZError(DBusError(.timeout, "no reply")).code == .timeout)
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.UnknownObject", "gone")).code == .notFound)
        #expect(BlueZError(DBusError(.typeMismatch, "bad")).code == .unexpectedReply)
        #expect(BlueZError(DBusError(.disconnected, "bus gone")).code == .unavailable)
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.ServiceUnknown", "no bluetoothd")).code == .unavailable)
    }
}
