import Noise
import Testing

@Suite struct TransportTests {
    @Test func messagesFlowBothWays() throws {
        let (initiator, responder) = try handshakePair()
        var business = try initiator.transport()
        var customer = try responder.transport()
        #expect(business.handshakeHash == customer.handshakeHash)
        for round in 0..<5 {
            let ping = Array("ping \(round)".utf8)
            #expect(try customer.decrypt(try business.encrypt(ping)) == ping)
            let pong = Array("pong \(round)".utf8)
            #expect(try business.decrypt(try customer.encrypt(pong)) == pong)
        }
        #expect(business.sendingNonce == 5 && customer.receivingNonce == 5)
    }

    @Test func aReplayedMessageFailsAndTheCounterStays() throws {
        let (initiator, responder) = try handshakePair()
        var business = try initiator.transport()
        var customer = try responder.transport()
        let first = try business.encrypt([1])
        _ = try customer.decrypt(first)
        #expect(noiseError { _ = try customer.decrypt(first) } == .decryptionFailed)
        #expect(customer.receivingNonce == 1)
        #expect(try customer.decrypt(try business.encrypt([2])) == [2])
    }

    @Test func reorderedOrDroppedMessagesFail() throws {
        let (initiator, responder) = try handshakePair()
        var business = try initiator.transport()
        var customer = try responder.transport()
        let first = try business.encrypt([1])
        let second = try business.encrypt([2])
        #expect(noiseError { _ = try customer.decrypt(second) } == .decryptionFailed)
        #expect(try customer.decrypt(first) == [1])
        #expect(try customer.decrypt(second) == [2])
    }

    @Test func alteredShortAndOversizedMessagesFail() throws {
        let (initiator, responder) = try handshakePair()
        var business = try initiator.transport()
        var customer = try responder.transport()
        var message = try business.encrypt(Array("pay 12.50".utf8))
        message[3] ^= 0x80
        #expect(noiseError { _ = try customer.decrypt(message) } == .decryptionFailed)
        #expect(noiseError { _ = try customer.decrypt([UInt8](repeating: 0, count: 15)) } == .messageTooShort)
        #expect(noiseError { _ = try customer.decrypt([UInt8](repeating: 0, count: 65536)) } == .messageTooLong)
        #expect(noiseError { _ = try business.encrypt([UInt8](repeating: 0, count: 65520)) } == .messageTooLong)
        #expect(try business.encrypt([UInt8](repeating: 0, count: 65519)).count == 65535)
    }

    @Test func sessionsDoNotShareKeys() throws {
        let (initiatorA, _) = try handshakePair()
        let (_, responderB) = try handshakePair()
        var business = try initiatorA.transport()
        var otherCustomer = try responderB.transport()
        #expect(noiseError { _ = try otherCustomer.decrypt(try business.encrypt([1])) } == .decryptionFailed)
    }
}
