import DBusKit
import Foundation
import Testing

/// Every type BlueZ uses goes through a real dbus-daemon and comes back unchanged.
@Suite(.timeLimit(.minutes(1))) struct MarshallingTests {
    static let values: [DBusValue] = [
        .byte(0), .byte(255), .boolean(true), .boolean(false),
        .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(.max), .uint32(.max),
        .int64(.min), .int64(.max), .uint64(.max), .double(-1.5e300), .double(0),
        .string(""), .string("héllo ✓ 支付"), .string(String(repeating: "x", count: 65_536)),
        .objectPath("/"), .objectPath("/org/bluez/hci0/dev_00_AA_01_00_00_00"), .signature("a{oa{sa{sv}}}"),
        .bytes([]), .bytes([7]), .bytes((0..<102_400).map { UInt8(truncatingIfNeeded: $0 &* 13) }),
        .strings(["a", "b", ""]), .array(element: "s", []), .array(element: "a{sv}", []),
        .array(element: "(ou)", [.structure([.objectPath("/a"), .uint32(1)]), .structure([.objectPath("/b"), .uint32(2)])]),
        .stringDictionary(["Powered": .boolean(true), "Name": .string("n"), "Nested": .variant(.variant(.bytes([1, 2])))]),
        .dictionary(key: "y", value: "s", [DBusDictEntry(key: .byte(1), value: .string("one"))]),
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            [
                DBusDictEntry(
                    key: .objectPath("/org/bluez/hci0"),
                    value: .dictionary(
                        key: "s", value: "a{sv}",
                        [DBusDictEntry(key: .string("org.bluez.Adapter1"), value: .stringDictionary(["Powered": .boolean(true)]))]))
            ]),
        .structure([.string("s"), .structure([.int32(-1), .bytes([9])])]),
        .variant(.variant(.uint16(3))),
    ]

    @Test(arguments: values)
    func roundTrip(_ value: DBusValue) async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Echo": echo(value.signature)])])
        let reply = try await pair.call("Echo", [value])
        #expect(reply.signature == value.signature)
        #expect(reply.arguments == [value])
    }

    @Test func unixFileDescriptorCarriesTheOpenFile() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.server.export("/test", interfaces: [DBusInterface(testInterface, methods: ["Echo": echo("h")])])
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let readEnd = DBusUnixFD(owning: fds[0])
        let reply = try await pair.call("Echo", [.unixFD(readEnd)])
        guard case .unixFD(let received) = reply.arguments.first else {
            Issue.record("no fd in \(reply.arguments)")
            return
        }
        #expect(received.rawValue != readEnd.rawValue)  // a new descriptor for the same pipe
        let message: [UInt8] = Array("blepay".utf8)
        #expect(write(fds[1], message, message.count) == message.count)
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = read(received.rawValue, &buffer, buffer.count)
        #expect(Array(buffer.prefix(max(0, n))) == message)
    }

    static let invalidValues: [(DBusValue, DBusError.Code)] = [
        (.array(element: "s", [.string("a"), .uint32(1)]), .typeMismatch),
        (.dictionary(key: "s", value: "v", [DBusDictEntry(key: .string("k"), value: .string("not a variant"))]), .typeMismatch),
        (.dictionary(key: "v", value: "s", []), .invalidValue),
        (.string("nul\0inside"), .invalidValue),
        (.structure([]), .invalidValue),
        (.array(element: "ss", []), .invalidValue),
    ]

    @Test(arguments: invalidValues)
    func invalidValuesAreTypedErrors(_ value: DBusValue, _ code: DBusError.Code) async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let error = await dbusError { _ = try await pair.call("Echo", [value]) }
        #expect(error?.code == code)
    }

    @Test func invalidNamesAndPathsAreTypedErrors() async throws {
        // Variables, not literals: a literal would use the (trapping) literal initializer.
        for raw in ["no/leading/slash", "/trailing/", "/double//slash", "/bad-char", ""] {
            #expect(throws: DBusError.self) { try DBusObjectPath(raw) }
        }
        for raw in ["a{", "a{vs}", "(", "z"] {
            #expect(throws: DBusError.self) { try DBusSignature(raw) }
        }
        let pair = try await BusPair.make()
        defer { pair.stop() }
        for (interface, member) in [("not an interface", "M"), (testInterface, "bad-member"), (testInterface, "")] {
            let error = await dbusError {
                _ = try await pair.client.call(destination: pair.server.uniqueName, path: "/test", interface: interface, member: member)
            }
            #expect(error?.code == .invalidValue)
        }
    }

    @Test func decodingTheWrongTypeThrows() throws {
        #expect(throws: DBusError.self) { try DBusValue.uint32(1).decode(String.self) }
        #expect(throws: DBusError.self) { try DBusValue.int32(-1).decode(UInt16.self) }
        #expect(throws: DBusError.self) { try DBusValue.string("x").decode([String: DBusValue].self) }
        #expect(try DBusValue.variant(.string("x")).decode(String.self) == "x")
        #expect(try DBusValue.uint16(517).decode(Int.self) == 517)
        #expect(try DBusValue.stringDictionary(["a": .uint32(1)]).decode([String: UInt32].self) == ["a": 1])
    }
}
