import Crypto
import Noise
import Testing

@Suite struct HandshakeTests {
    @Test func bothSidesLearnTheOtherStaticKeyAndShareTheHash() throws {
        let initiatorKey = Curve25519.KeyAgreement.PrivateKey()
        let responderKey = Curve25519.KeyAgreement.PrivateKey()
        var initiator = HandshakeState(role: .initiator, staticKey: initiatorKey, prologue: Array("p".utf8))
        var responder = HandshakeState(role: .responder, staticKey: responderKey, prologue: Array("p".utf8))
        #expect(try responder.readMessage(try initiator.writeMessage(payload: [1])) == [1])
        #expect(try initiator.readMessage(try responder.writeMessage(payload: [2])) == [2])
        #expect(initiator.remoteStaticKey == Array(responderKey.publicKey.rawRepresentation))
        #expect(try responder.readMessage(try initiator.writeMessage(payload: [3])) == [3])
        #expect(responder.remoteStaticKey == Array(initiatorKey.publicKey.rawRepresentation))
        #expect(initiator.isComplete && responder.isComplete)
        #expect(initiator.handshakeHash == responder.handshakeHash)
    }

    @Test func theSecondPayloadIsEncrypted() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: [])
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: [])
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let secret = Array("secret payload".utf8)
        let message = try responder.writeMessage(payload: secret)
        #expect(message.count == 32 + 48 + secret.count + 16)
        #expect(!message.indices.dropLast(secret.count - 1).contains { Array(message[$0..<$0 + secret.count]) == secret })
    }

    @Test func aDifferentPrologueFailsTheHandshake() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: Array("blepay/1 a".utf8))
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: Array("blepay/1 b".utf8))
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let second = try responder.writeMessage(payload: [])
        #expect(noiseError { _ = try initiator.readMessage(second) } == .decryptionFailed)
    }

    @Test func anAlteredMessageFailsAndLeavesTheStateUsable() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: [])
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: [])
        _ = try responder.readMessage(try initiator.writeMessage(payload: []))
        let second = try responder.writeMessage(payload: [9])
        for index in [0, 40, second.count - 1] {
            var altered = second
            altered[index] ^= 0x01
            #expect(noiseError { _ = try initiator.readMessage(altered) } == .decryptionFailed, "byte \(index)")
        }
        #expect(try initiator.readMessage(second) == [9])
    }

    @Test func truncatedMessagesAreRejected() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: [])
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: [])
        let first = try initiator.writeMessage(payload: [])
        #expect(noiseError { _ = try responder.readMessage(Array(first.prefix(31))) } == .messageTooShort)
        _ = try responder.readMessage(first)
        let second = try responder.writeMessage(payload: [])
        #expect(noiseError { _ = try initiator.readMessage(Array(second.prefix(70))) } == .messageTooShort)
        #expect(noiseError { _ = try initiator.readMessage(Array(second.prefix(95))) } == .messageTooShort)
    }

    @Test func messagesOutOfTurnAreRefused() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: [])
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: [])
        #expect(noiseError { _ = try responder.writeMessage(payload: []) } == .outOfTurn)
        #expect(noiseError { _ = try initiator.readMessage([UInt8](repeating: 1, count: 32)) } == .outOfTurn)
        #expect(noiseError { _ = try initiator.transport() } == .outOfTurn)
        let first = try initiator.writeMessage(payload: [])
        #expect(noiseError { _ = try initiator.writeMessage(payload: []) } == .outOfTurn)
        _ = try responder.readMessage(first)
        #expect(noiseError { _ = try responder.readMessage(first) } == .outOfTurn)
    }

    @Test func aLowOrderEphemeralKeyIsRejected() throws {
        var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: [])
        _ = try responder.readMessage([UInt8](repeating: 0, count: 32))
        #expect(noiseError { _ = try responder.writeMessage(payload: []) } == .invalidKey)
    }

    @Test func anOversizedPayloadIsRefused() throws {
        var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: [])
        #expect(noiseError { _ = try initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65535)) }
            == .messageTooLong)
        #expect(!initiator.isComplete && initiator.isOurTurn)
    }
}
