import BlepayProtocol
import Testing

/// A connection's protocol as event scripts (`Link`): fragments in, actions out, no I/O.
@Suite struct LinkTests {
    static let start = ContinuousClock.now

    /// A customer and a business link wired back to back; `pump` carries fragments between them until both are
    /// quiet and keeps everything else they asked for.
    struct Pair {
        var customer: Link
        var business: Link
        var customerActions: [LinkAction] = []
        var businessActions: [LinkAction] = []

        init(mtu: Int = 23, customer: CustomerHandshake = Parties.customer()) throws {
            self.customer = try Link(customer: customer, mtu: mtu, at: LinkTests.start)
            business = try Link(business: Parties.business(), mtu: mtu, at: LinkTests.start)
        }

        mutating func pump(business first: [LinkAction] = [], customer second: [LinkAction] = []) {
            var toCustomer = first
            var toBusiness = second
            while !toCustomer.isEmpty || !toBusiness.isEmpty {
                var next: [LinkAction] = []
                for action in toCustomer {
                    guard case .transmit(let fragment) = action else { businessActions.append(action); continue }
                    next += customer.receive(fragment, at: LinkTests.start, now: Parties.now)
                }
                toCustomer = []
                for action in toBusiness {
                    guard case .transmit(let fragment) = action else { customerActions.append(action); continue }
                    toCustomer += business.receive(fragment, at: LinkTests.start, now: Parties.now)
                }
                toBusiness = next
            }
        }

        mutating func establish() {
            pump(business: business.start())
        }
    }

    static func fragments(_ actions: [LinkAction]) -> [[UInt8]] {
        actions.compactMap { if case .transmit(let bytes) = $0 { bytes } else { nil } }
    }

    static func closeCode(_ actions: [LinkAction]) -> ProtocolError.Code? {
        guard case .close(let error) = actions.last else { return nil }
        return error.code
    }

    @Test func aPaymentCrossesTwoLinksFragmentedAtTheMinimumMTU() throws {
        var pair = try Pair()
        pair.establish()
        #expect(pair.customerActions == [.established] && pair.businessActions == [.established])
        let customerSession = try #require(pair.customer.session)
        let businessSession = try #require(pair.business.session)
        #expect(customerSession.sessionHash == businessSession.sessionHash)

        let request = Parties.request()
        let sent = pair.business.send(.paymentRequest(request))
        #expect(Self.fragments(sent).count > 1 && Self.fragments(sent).allSatisfy { $0.count <= 20 })
        pair.pump(business: sent)
        #expect(pair.customerActions.last == .deliver(.paymentRequest(request)))

        let acceptance = try customerSession.accept(
            request, tipMinorUnits: 100, instrumentID: "card-1", delegatedInstrument: false, at: Parties.now,
            preAuthorization: nil, deviceKey: Parties.deviceKey)
        pair.pump(customer: pair.customer.send(.paymentAcceptance(acceptance)))
        #expect(pair.businessActions.last == .deliver(.paymentAcceptance(acceptance)))
        try businessSession.verify(acceptance, of: request)
    }

    @Test func aLargerMTUTakesFewerFragments() throws {
        var pair = try Pair()
        pair.establish()
        let small = Self.fragments(pair.business.send(.paymentRequest(Parties.request()))).count
        #expect(pair.business.setMTU(247) == [])
        let large = Self.fragments(pair.business.send(.paymentRequest(Parties.request()))).count
        #expect(large == 1 && small > large)
        #expect(Self.closeCode(pair.business.setMTU(22)) == .invalidMTU)
    }

    @Test func messagesBeforeTheHandshakeAreNotSent() throws {
        var pair = try Pair()
        #expect(pair.business.send(.paymentRequest(Parties.request())) == [])
        #expect(pair.customer.send(.paymentRequest(Parties.request())) == [])
        #expect(pair.customer.start() == [])
    }

    @Test func aRequestNotSignedByTheCertifiedKeyEndsTheSession() throws {
        var pair = try Pair()
        pair.establish()
        let forged = Parties.request(signedBy: Parties.deviceKey)
        pair.pump(business: pair.business.send(.paymentRequest(forged)))
        #expect(Self.closeCode(pair.customerActions) == .invalidSignature)
        guard case .deliver(.error(let told)) = pair.businessActions.last else {
            Issue.record("the business was not told: \(pair.businessActions)")
            return
        }
        #expect(told.code == .securityFailure && told.paymentID == nil)
        #expect(pair.customer.isClosed && pair.customer.session == nil)
    }

    @Test func aTamperedFragmentFailsDecryption() throws {
        var pair = try Pair()
        pair.establish()
        var fragments = Self.fragments(pair.business.send(.paymentRequest(Parties.request())))
        fragments[0][5] ^= 0x01
        var actions: [LinkAction] = []
        for fragment in fragments { actions += pair.customer.receive(fragment, at: Self.start, now: Parties.now) }
        #expect(Self.closeCode(actions) == .decryptionFailed)
        #expect(Self.fragments(actions).count >= 1, "the business is told, encrypted")
    }

    @Test func badFragmentsBeforeTheHandshakeAreAnsweredInPlaintext() throws {
        var link = try Link(customer: Parties.customer(), mtu: 23, at: Self.start)
        let actions = link.receive([0x80], at: Self.start, now: Parties.now)
        #expect(Self.closeCode(actions) == .truncated)
        let told = Self.fragments(actions)
        #expect(told.count == 1 && told[0][2] == Record.Kind.plaintextError.rawValue)
        #expect(link.receive([0x80, 0, 1], at: Self.start, now: Parties.now) == [])
        #expect(link.tick(at: Self.start + .seconds(60)) == [])
    }

    @Test func aBusinessThatReceivesBeforeItStartedCloses() throws {
        var link = try Link(business: Parties.business(), mtu: 23, at: Self.start)
        let actions = link.receive([0x80, 0, Record.Kind.handshake2.rawValue], at: Self.start, now: Parties.now)
        #expect(Self.closeCode(actions) == .unexpectedMessage)
    }

    @Test func aStalledHandshakeTimesOut() throws {
        var link = try Link(customer: Parties.customer(), mtu: 23, at: Self.start)
        #expect(link.tick(at: Self.start + .seconds(9)) == [])
        let actions = link.tick(at: Self.start + .seconds(11))
        #expect(Self.closeCode(actions) == .handshakeTimeout)
        #expect(Self.fragments(actions).count == 1)
    }

    @Test func anIncompleteRecordTimesOutOnceEstablished() throws {
        var pair = try Pair()
        pair.establish()
        let fragments = Self.fragments(pair.business.send(.paymentRequest(Parties.request())))
        #expect(pair.customer.receive(fragments[0], at: Self.start + .seconds(20), now: Parties.now) == [])
        #expect(pair.customer.tick(at: Self.start + .seconds(24)) == [])
        let actions = pair.customer.tick(at: Self.start + .seconds(26))
        #expect(Self.closeCode(actions) == .reassemblyTimeout)
        #expect(Self.fragments(actions).count >= 1)
    }

    @Test func aCustomerWithoutACommonVersionRefusesInPlaintext() throws {
        let info = try ProtocolInfo(versions: [2], capabilities: [], maximumMessageSize: 4079)
        var customer = try Link(customer: Parties.customer(info: info), mtu: 23, at: Self.start)
        var business = try Link(business: Parties.business(), mtu: 23, at: Self.start)
        var refusal: [LinkAction] = []
        for fragment in Self.fragments(business.start()) {
            refusal += customer.receive(fragment, at: Self.start, now: Parties.now)
        }
        #expect(Self.closeCode(refusal) == .unsupportedVersion)
        var answer: [LinkAction] = []
        for fragment in Self.fragments(refusal) { answer += business.receive(fragment, at: Self.start, now: Parties.now) }
        #expect(Self.closeCode(answer) == .unsupportedVersion)
        #expect(Self.fragments(answer).isEmpty, "an error is never answered with an error")
    }

    /// §6's direction table, each message sent by each side: what the sender's side may send is delivered; anything
    /// else is `unexpected-message`, answered with an encrypted Error 400 `protocol-violation`, then the close. A
    /// customer that executed a payment for an offline business sends it the result.
    @Test func aMessageFromTheWrongSideIsAnsweredWithATypedError() throws {
        let id = Sample.paymentID
        let table: [(message: Message, fromBusiness: Bool, fromCustomer: Bool)] = [
            (.paymentRequest(Parties.request()), true, false),
            (.paymentAcceptance(Sample.acceptance), false, true),
            (.cancelPayment(CancelPayment(paymentID: id, reason: .userCancelled)), true, true),
            (.paymentResult(try PaymentResult(paymentID: id, outcome: .finished(Sample.receipt))), true, true),
            (.otherPaid(OtherPaid(paymentID: id)), true, false),
            (.error(try ErrorMessage(code: .clockSkew, paymentID: id, detail: nil)), true, true),
            (.goAhead(GoAhead(paymentID: id, acceptanceHash: Sample.hash)), true, false),
            (.resultQuery(ResultQuery(paymentID: id, acceptanceHash: Sample.hash)), false, true),
        ]
        let violation = Message.error(try ErrorMessage(code: .protocolViolation, paymentID: nil, detail: nil))
        for (message, fromBusiness, fromCustomer) in table {
            for businessSends in [true, false] {
                var pair = try Pair()
                pair.establish()
                if businessSends {
                    pair.pump(business: pair.business.send(message))
                } else {
                    pair.pump(customer: pair.customer.send(message))
                }
                let (sender, receiver) = businessSends
                    ? (pair.businessActions, pair.customerActions) : (pair.customerActions, pair.businessActions)
                let sent = "\(message) from the \(businessSends ? "business" : "customer")"
                if businessSends ? fromBusiness : fromCustomer {
                    #expect(receiver.last == .deliver(message), "\(sent)")
                } else {
                    #expect(Self.closeCode(receiver) == .unexpectedMessage, "\(sent)")
                    #expect(sender.last == .deliver(violation), "\(sent): the sender is told")
                }
            }
        }
    }

    /// A record over 4096 bytes, in fragments BlueZ takes, is `message-too-large`: exactly one encrypted Error 400,
    /// then the close.
    @Test func aRecordOver4096BytesIsRefusedAndTheLinkCloses() throws {
        var pair = try Pair(mtu: 517)
        pair.establish()
        var fragmenter = try Fragmenter(mtu: 517)
        _ = try fragmenter.fragments(of: [1])  // the business's records so far: handshakes 1 and 3
        _ = try fragmenter.fragments(of: [3])
        var oversized = try fragmenter.fragments(of: Array(repeating: 4, count: 4096))
        oversized[oversized.count - 1][0] &= 0x7F  // not the last: one more fragment follows
        oversized.append([0x80 | oversized[0][0], UInt8(oversized.count), 0])
        #expect(oversized.allSatisfy { $0.count <= Framing.maximumFragmentSize })
        var actions: [LinkAction] = []
        for fragment in oversized { actions += pair.customer.receive(fragment, at: Self.start, now: Parties.now) }
        #expect(actions.count == 2 && Self.fragments(actions).count == 1, "one Error record, then the close")
        #expect(Self.closeCode(actions) == .messageTooLarge)
        pair.pump(customer: actions)
        guard case .deliver(.error(let told)) = pair.businessActions.last else {
            Issue.record("the business was not told: \(pair.businessActions)")
            return
        }
        #expect(told.code == .protocolViolation)
    }

    /// The business gives up during the handshake (here after handshake 2, with 402): the customer closes with the
    /// failure named and sends nothing, since an error is never answered with an error (§7.6).
    @Test func aPlaintextErrorFromTheBusinessIsNotAnswered() throws {
        var customer = try Link(customer: Parties.customer(), mtu: 23, at: Self.start)
        var business = try Link(business: Parties.business(), mtu: 23, at: Self.start)
        var second: [LinkAction] = []
        for fragment in Self.fragments(business.start()) {
            second += customer.receive(fragment, at: Self.start, now: Parties.now)
        }
        #expect(!Self.fragments(second).isEmpty, "handshake 2")
        var fragmenter = try Fragmenter(mtu: 23)
        _ = try fragmenter.fragments(of: [1])  // handshake 1 was the business's first record
        let giveUp = Record.plaintextError(for: ProtocolError(.handshakeFailed, "handshake 2 did not decrypt"))
        var actions: [LinkAction] = []
        for fragment in try fragmenter.fragments(of: giveUp.encoded) {
            actions += customer.receive(fragment, at: Self.start, now: Parties.now)
        }
        #expect(actions.count == 1 && Self.closeCode(actions) == .handshakeFailed)
        #expect(customer.isClosed)
    }

    /// A plaintext error that cannot be read is a malformed record: answered with 400 and closed for the decoding
    /// failure, not taken as the peer's word (402 `handshake-failed`), on the link as by the handshake alone.
    @Test func anUnreadablePlaintextErrorIsAProtocolViolation() throws {
        var business = try Link(business: Parties.business(), mtu: 23, at: Self.start)
        _ = business.start()
        let actions = business.receive([0x80, 0, Record.Kind.plaintextError.rawValue, 0xFF], at: Self.start, now: Parties.now)
        #expect(Self.closeCode(actions) == .truncated)
        let told = Self.fragments(actions)
        #expect(told.count == 1 && told[0][2] == Record.Kind.plaintextError.rawValue)
        let message = try ErrorMessage(encoded: Array(told[0][3...]))
        #expect(message.code == .protocolViolation)

        var handshake = try Parties.business()
        _ = try handshake.start()
        #expect(protocolError { _ = try handshake.receive(Record(kind: .plaintextError, body: [0xFF])) } == .truncated)
    }
}
