import DBusKit
import Testing

/// Each subscription receives exactly the signals its own rule matches, in order.
@Suite(.timeLimit(.minutes(1))) struct SignalTests {
    @Test func eachSubscriptionGetsExactlyWhatItsRuleMatches() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let other = try await pair.bus.connect()
        defer { other.close() }
        let s = pair.server.uniqueName
        func subscribe(_ rule: DBusMatchRule) async throws -> AsyncStream<DBusMessage> {
            try await pair.client.signals(matching: rule)
        }
        let byMember = try await subscribe(DBusMatchRule(sender: s, interface: testInterface, member: "Paid"))
        let byPath = try await subscribe(DBusMatchRule(sender: s, path: "/pay/a"))
        let byNamespace = try await subscribe(DBusMatchRule(sender: s, pathNamespace: "/pay"))
        let byArgument = try await subscribe(DBusMatchRule(sender: s, interface: testInterface, arguments: [0: "usd"]))
        let otherInterface = try await subscribe(DBusMatchRule(sender: s, interface: "org.blepay.Other"))

        let emissions: [(DBusConnection, DBusObjectPath, String, String, [DBusValue])] = [
            (pair.server, "/pay/a", testInterface, "Paid", [.string("usd")]),
            (pair.server, "/pay/a/b", testInterface, "Cancelled", [.string("eur")]),
            (pair.server, "/payx", testInterface, "Paid", [.string("eur")]),
            (pair.server, "/pay", "org.blepay.Other", "Paid", [.string("usd")]),
            (other, "/pay/a", testInterface, "Paid", [.string("usd")]),  // another sender: matches no rule
            (pair.server, "/", testInterface, "Expired", [.string("usd")]),
        ]
        for (connection, path, interface, member, args) in emissions {
            try connection.emitSignal(path: path, interface: interface, member: member, arguments: args)
        }
        // End markers after everything else, one matching each rule; each subscription stops at its first.
        let markers: [(DBusObjectPath, String, String, String)] = [
            ("/pay/a", testInterface, "Paid", "x"), ("/", testInterface, "Done", "usd"), ("/pay", "org.blepay.Other", "Done", "x"),
        ]
        for (path, interface, member, arg0) in markers {
            try pair.server.emitSignal(path: path, interface: interface, member: member, arguments: [.string(arg0), endMarker])
        }
        #expect(await membersUntilSentinel(byMember) == ["/pay/a|Paid", "/payx|Paid"])
        #expect(await membersUntilSentinel(byPath) == ["/pay/a|Paid"])
        #expect(await membersUntilSentinel(byNamespace) == ["/pay/a|Paid", "/pay/a/b|Cancelled", "/pay|Paid"])
        #expect(await membersUntilSentinel(byArgument) == ["/pay/a|Paid", "/|Expired"])
        #expect(await membersUntilSentinel(otherInterface) == ["/pay|Paid"])
    }

    /// Signals of several rules come as one stream in the bus's order, once each; `argNpath` selects a subtree.
    @Test func oneStreamOfSeveralRulesKeepsTheBusOrder() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let s = pair.server.uniqueName
        let stream = try await pair.client.signals(matching: [
            DBusMatchRule(sender: s, pathNamespace: "/pay/a"),
            DBusMatchRule(sender: s, path: "/", argumentPaths: [0: "/pay/a/"]),
            DBusMatchRule(sender: s, path: "/", argumentPaths: [0: "/pay/a"]),
        ])
        let emissions: [(DBusObjectPath, String, DBusValue)] = [
            ("/", "AddedBelow", .objectPath("/pay/a/b")),
            ("/pay/a/b", "Changed", .string("x")),
            ("/", "AddedOther", .objectPath("/pay/ab")),  // a sibling whose name begins alike
            ("/pay/b", "ChangedOther", .string("x")),
            ("/", "AddedItself", .objectPath("/pay/a")),
            ("/", "AddedParent", .objectPath("/pay")),
            ("/pay/a", "Both", .objectPath("/pay/a/c")),  // two rules match: delivered once
            ("/", "RemovedBelow", .string("/pay/a/b/c")),
        ]
        for (path, member, arg0) in emissions {
            try pair.server.emitSignal(path: path, interface: testInterface, member: member, arguments: [arg0])
        }
        try pair.server.emitSignal(path: "/pay/a", interface: testInterface, member: "Sentinel")
        let seen = await membersUntilSentinel(stream)
        #expect(seen == ["/|AddedBelow", "/pay/a/b|Changed", "/|AddedItself", "/pay/a|Both", "/|RemovedBelow"])
        #expect(
            DBusMatchRule(sender: s, path: "/", argumentPaths: [0: "/pay/a/"]).description
                == "type='signal',sender='\(s)',path='/',arg0path='/pay/a/'")
    }

    /// What `keeping` turns away on the connection's thread never reaches the stream.
    @Test func aSignalTurnedAwayNeverReachesTheStream() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let stream = try await pair.client.signals(
            matching: [DBusMatchRule(sender: pair.server.uniqueName, interface: testInterface)],
            keeping: { $0.member != "Noise" })
        for member in ["Noise", "Kept", "Noise", "AlsoKept", "Sentinel"] {
            try pair.server.emitSignal(path: "/", interface: testInterface, member: member)
        }
        #expect(await membersUntilSentinel(stream) == ["/|Kept", "/|AlsoKept"])
    }

    @Test func aWellKnownSenderIsFollowedToItsCurrentOwner() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        let second = try await pair.bus.connect()
        defer { second.close() }
        try await pair.server.requestName("org.blepay.Owner")
        let stream = try await pair.client.signals(matching: DBusMatchRule(sender: "org.blepay.Owner", interface: testInterface))
        let changes = try await pair.client.signals(
            matching: DBusMatchRule(sender: "org.freedesktop.DBus", member: "NameOwnerChanged", arguments: [0: "org.blepay.Owner"]))
        var changeIterator = changes.makeAsyncIterator()

        try pair.server.emitSignal(path: "/one", interface: testInterface, member: "FromFirst")
        try second.emitSignal(path: "/two", interface: testInterface, member: "NotOwnerYet")
        try await pair.server.releaseName("org.blepay.Owner")
        try await second.requestName("org.blepay.Owner")
        // Both owner changes (released, then taken) have reached the client before the next signals.
        _ = await changeIterator.next()
        _ = await changeIterator.next()
        try pair.server.emitSignal(path: "/one", interface: testInterface, member: "FormerOwner")
        try second.emitSignal(path: "/two", interface: testInterface, member: "FromSecond")
        try second.emitSignal(path: "/two", interface: testInterface, member: "Sentinel")
        #expect(await membersUntilSentinel(stream) == ["/one|FromFirst", "/two|FromSecond"])
        #expect(try await pair.client.nameOwner("org.blepay.Owner") == second.uniqueName)
        #expect(try await pair.client.nameOwner("org.blepay.Nobody") == nil)
    }

    @Test func droppingAStreamEndsItsSubscription() async throws {
        let pair = try await BusPair.make()
        defer { pair.stop() }
        var dropped: AsyncStream<DBusMessage>? = try await pair.client.signals(
            matching: DBusMatchRule(sender: pair.server.uniqueName, member: "Dropped"))
        #expect(dropped != nil)
        dropped = nil
        let kept = try await pair.client.signals(matching: DBusMatchRule(sender: pair.server.uniqueName, interface: testInterface))
        try pair.server.emitSignal(path: "/", interface: testInterface, member: "Dropped")
        try pair.server.emitSignal(path: "/", interface: testInterface, member: "Sentinel")
        #expect(await membersUntilSentinel(kept) == ["/|Dropped"])
    }
}
