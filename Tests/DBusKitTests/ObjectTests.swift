import DBusKit
import Testing

/// Exported objects answer Properties, ObjectManager and Introspectable as peers expect.
@Suite(.timeLimit(.minutes(1))) struct ObjectTests {
    struct Refused: Error {}

    func exportCounter(_ pair: BusPair) async throws -> DBusObjectHandle {
        try await pair.server.export(
            "/test",
            interfaces: [
                DBusInterface(
                    testInterface, methods: ["Echo": echo("s")],
                    properties: [
                        "Name": DBusProperty(.string("counter")),
                        "Count": DBusProperty(.uint32(1), access: .readWrite) { value in
                            if value == .uint32(13) { throw Refused() }
                        },
                    ],
                    signals: ["Paid": "su"])
            ])
    }

    func properties(_ pair: BusPair, _ member: String, _ args: [DBusValue], path: DBusObjectPath = "/test")
        async throws(DBusError) -> DBusMessage
    {
        try await pair.client.call(
            destination: pair.server.uniqueName, path: path, interface: "org.freedesktop.DBus.Properties",
            member: member, arguments: args)
    }

    @Test func propertiesGetGetAllAndSet() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await exportCounter(pair)
        let changes = try await pair.client.signals(matching: DBusMatchRule(sender: pair.server.uniqueName, member: "PropertiesChanged"))
        #expect(try await properties(pair, "Get", [.string(testInterface), .string("Count")]).arguments == [.variant(.uint32(1))])
        let all = try await properties(pair, "GetAll", [.string(testInterface)]).argument(expecting: "a{sv}")
        #expect(try all.decode([String: DBusValue].self).mapValues(\.unwrapped) == ["Name": .string("counter"), "Count": .uint32(1)])

        _ = try await properties(pair, "Set", [.string(testInterface), .string("Count"), .variant(.uint32(5))])
        #expect(try await properties(pair, "Get", [.string(testInterface), .string("Count")]).arguments == [.variant(.uint32(5))])
        var iterator = changes.makeAsyncIterator()
        let changed = await iterator.next()
        #expect(changed?.path == "/test")
        #expect(changed?.arguments == [.string(testInterface), .stringDictionary(["Count": .uint32(5)]), .strings([])])

        let cases: [([DBusValue], String)] = [
            ([.string(testInterface), .string("Name"), .variant(.string("x"))], "org.freedesktop.DBus.Error.PropertyReadOnly"),
            ([.string(testInterface), .string("Count"), .variant(.string("x"))], "org.freedesktop.DBus.Error.InvalidArgs"),
            ([.string(testInterface), .string("Count"), .variant(.uint32(13))], "org.freedesktop.DBus.Error.InvalidArgs"),
            ([.string(testInterface), .string("Missing"), .variant(.uint32(1))], "org.freedesktop.DBus.Error.UnknownProperty"),
            ([.string("org.blepay.None"), .string("Count"), .variant(.uint32(1))], "org.freedesktop.DBus.Error.UnknownInterface"),
        ]
        for (args, name) in cases {
            let error = await dbusError { _ = try await properties(pair, "Set", args) }
            #expect(error?.name == name, "Set \(args)")
        }
        #expect(try await properties(pair, "Get", [.string(testInterface), .string("Count")]).arguments == [.variant(.uint32(5))])
    }

    @Test func localChangesEmitPropertiesChanged() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let handle = try await exportCounter(pair)
        let changes = try await pair.client.signals(matching: DBusMatchRule(sender: pair.server.uniqueName, member: "PropertiesChanged"))
        try await handle.set(.uint32(42), property: "Count", interface: testInterface)
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.arguments[1] == .stringDictionary(["Count": .uint32(42)]))
        await #expect(throws: DBusError.self) { try await handle.set(.string("x"), property: "Count", interface: testInterface) }
    }

    @Test func objectManagerListsAndAnnouncesChildren() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await pair.server.export("/app", interfaces: [], objectManager: true)
        _ = try await pair.server.export("/app/s0", interfaces: [DBusInterface("org.blepay.Service", properties: ["UUID": DBusProperty(.string("u0"))])])
        let announcements = try await pair.client.signals(
            matching: DBusMatchRule(sender: pair.server.uniqueName, interface: "org.freedesktop.DBus.ObjectManager"))
        let child = try await pair.server.export("/app/s0/c0", interfaces: [DBusInterface("org.blepay.Char", properties: ["N": DBusProperty(.byte(1))])])

        let reply = try await pair.client.call(
            destination: pair.server.uniqueName, path: "/app", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        let objects = try reply.argument(expecting: "a{oa{sa{sv}}}").decode([DBusObjectPath: [String: [String: DBusValue]]].self)
        #expect(Set(objects.keys) == ["/app/s0", "/app/s0/c0"])
        #expect(objects["/app/s0"]?["org.blepay.Service"]?["UUID"]?.unwrapped == .string("u0"))

        await child.unexport()
        var iterator = announcements.makeAsyncIterator()
        let added = await iterator.next()
        #expect(added?.member == "InterfacesAdded")
        #expect(added?.path == "/app")
        #expect(added?.arguments.first == .objectPath("/app/s0/c0"))
        let removed = await iterator.next()
        #expect(removed?.member == "InterfacesRemoved")
        #expect(removed?.arguments == [.objectPath("/app/s0/c0"), .strings(["org.blepay.Char"])])
    }

    @Test func introspectionDescribesInterfacesAndChildren() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await exportCounter(pair)
        _ = try await pair.server.export("/test/child", interfaces: [])
        func introspect(_ path: DBusObjectPath) async throws -> String {
            try await pair.client.call(
                destination: pair.server.uniqueName, path: path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"
            ).argument(expecting: "s").decode(String.self)
        }
        let xml = try await introspect("/test")
        for fragment in [
            #"<interface name="org.blepay.Test">"#, #"<method name="Echo">"#, #"<arg type="s" direction="in"/>"#,
            #"<property name="Count" type="u" access="readwrite"/>"#, #"<signal name="Paid">"#,
            #"<interface name="org.freedesktop.DBus.Properties">"#, #"<node name="child"/>"#,
        ] {
            #expect(xml.contains(fragment), "missing \(fragment)")
        }
        #expect(try await introspect("/").contains(#"<node name="test"/>"#))
    }

    @Test func pathsAndNamesAreExclusive() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        _ = try await exportCounter(pair)
        let twice = await dbusError { _ = try await exportCounter(pair) }
        #expect(twice?.code == .pathInUse)

        try await pair.server.requestName("org.blepay.Exclusive")
        let taken = await dbusError { try await pair.client.requestName("org.blepay.Exclusive") }
        #expect(taken?.code == .nameNotAcquired)
        #expect(try await pair.client.nameOwner("org.blepay.Exclusive") == pair.server.uniqueName)
        let invalid = await dbusError { try await pair.client.requestName(":1.1") }
        #expect(invalid?.code == .invalidValue)
    }
}
