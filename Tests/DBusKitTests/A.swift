import DBusKit
import DBusTestSupport
import Testing

@Test func smoke() async throws {
    let bus = try TestBus()
    defer { bus.stop() }
    let server = try await bus.connect()
    let client = try await bus.connect()
    let handle = try await server.export("/test", interfaces: [
        DBusInterface("org.blepay.Test", methods: [
            "Echo": DBusMethod(input: "s", output: "s") { call in [call.arguments[0]] }
        ], properties: ["Count": DBusProperty(.uint32(7), access: .readWrite)])
    ], objectManager: true)
    let reply = try await client.call(destination: server.uniqueName, path: "/test", interface: "org.blepay.Test", member: "Echo", arguments: [.string("hi")])
    #expect(reply.arguments == [.string("hi")])
    let signals = try await client.signals(matching: DBusMatchRule(sender: server.uniqueName, interface: "org.freedesktop.DBus.Properties"))
    try await handle.set(.uint32(8), property: "Count", interface: "org.blepay.Test")
    var it = signals.makeAsyncIterator()
    let sig = await it.next()
    #expect(sig?.member == "PropertiesChanged")
    let intro = try await client.call(destination: server.uniqueName, path: "/", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
    print(intro.arguments)
}
