@testable import BlueZ
import DBusKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct BlueZErrorTests {
    /// Every name of BlueZ 5.66's doc/errors.txt that has a code of its own.
    static let names: [(String, BlueZError.Code)] = [
        ("Failed", .failed), ("InProgress", .inProgress), ("AlreadyConnected", .alreadyConnected),
        ("AlreadyExists", .alreadyExists), ("NotReady", .notReady), ("NotConnected", .notConnected),
        ("NotPermitted", .notPermitted), ("NotAuthorized", .notAuthorized), ("NotSupported", .notSupported),
        ("NotAvailable", .notAvailable), ("DoesNotExist", .doesNotExist), ("InvalidArguments", .invalidArguments),
        ("InvalidValueLength", .invalidValueLength), ("InvalidOffset", .invalidOffset),
        ("AuthenticationFailed", .authenticationFailed), ("ConnectionAttemptFailed", .connectionAttemptFailed),
    ]

    @Test(arguments: names)
    func bluezNamesMapToTheirCodes(_ name: String, _ code: BlueZError.Code) {
        let error = BlueZError(DBusError.reply(name: "org.bluez.Error.\(name)", "le-connection-abort-by-local"))
        #expect(error.code == code)
        #expect(error.dbusName == "org.bluez.Error.\(name)")
        #expect(error.message == "le-connection-abort-by-local")
    }

    @Test func anUnknownBluezNameIsOtherAndKeepsItsName() {
        let error = BlueZError(DBusError.reply(name: "org.bluez.Error.SomethingNew", "new in 5.70"))
        #expect(error.code == .other)
        #expect(error.dbusName == "org.bluez.Error.SomethingNew")
        #expect(error.message == "new in 5.70")
    }

    @Test func busErrorsMapToOurCodes() {
        #expect(BlueZError(DBusError(.timeout, "no reply")).code == .timeout)
        #expect(BlueZError(DBusError(.timeout, name: "org.freedesktop.DBus.Error.NoReply", "no reply")).code == .timeout)
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.UnknownObject", "gone")).code == .notFound)
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.UnknownMethod", "no")).code == .notFound)
        #expect(BlueZError(DBusError(.typeMismatch, "bad")).code == .unexpectedReply)
        #expect(BlueZError(DBusError(.disconnected, "bus gone")).code == .unavailable)
        // A stop that cancels a call says nothing of bluetoothd: it was `bluez.unavailable`.
        #expect(BlueZError(DBusError(.cancelled, "RegisterAdvertisement was cancelled")).code == .cancelled)
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.ServiceUnknown", "no bluetoothd")).code
            == .unavailable)
    }

    @Test(arguments: names.map(\.0) + ["SomethingNew"])
    func bluezNamesRoundTripThroughReplies(_ name: String) {
        let reply = BlueZError(DBusError.reply(name: "org.bluez.Error.\(name)", "why")).asReply
        #expect(reply.name == "org.bluez.Error.\(name)")
        #expect(reply.message == "why")
        #expect(reply.code == .remote)
    }

    @Test(arguments: names)
    func ownErrorsReplyWithTheNameOfTheirCode(_ name: String, _ code: BlueZError.Code) {
        let reply = BlueZError(code, "refused").asReply
        #expect(reply.name == "org.bluez.Error.\(name)")
        #expect(reply.message == "refused")
    }

    @Test func codesWithoutABluezNameReplyFailed() {
        #expect(BlueZError(.timeout, "slow").asReply.name == "org.bluez.Error.Failed")
        #expect(BlueZError(DBusError.reply(name: "org.freedesktop.DBus.Error.UnknownObject", "gone")).asReply.name
            == "org.bluez.Error.Failed")
    }
}
