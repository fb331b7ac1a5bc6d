import Crypto
import Noise
import Testing

/// The published Noise_XX_25519_ChaChaPoly_SHA256 vectors: every handshake and transport message must come out
/// byte for byte, and both sides must read each other's payloads.
@Suite struct VectorTests {
    @Test func publishedVectorsReproduce() throws {
        let vectors = try NoiseVector.loadAll()
        #expect(vectors.count == 2)
        for vector in vectors {
            var initiator = HandshakeState(
                role: .initiator, staticKey: try privateKey(vector.init_static),
                prologue: [UInt8](hex: vector.init_prologue)!, ephemeralKey: try privateKey(vector.init_ephemeral))
            var responder = HandshakeState(
                role: .responder, staticKey: try privateKey(vector.resp_static),
                prologue: [UInt8](hex: vector.resp_prologue)!, ephemeralKey: try privateKey(vector.resp_ephemeral))
            var initiatorTransport: TransportState?
            var responderTransport: TransportState?
            for (index, message) in vector.messages.enumerated() {
                let payload = [UInt8](hex: message.payload)!
                let initiatorSends = index % 2 == 0
                let written: [UInt8]
                let read: [UInt8]
                if index < 3 {
                    if initiatorSends {
                        written = try initiator.writeMessage(payload: payload)
                        read = try responder.readMessage(written)
                    } else {
                        written = try responder.writeMessage(payload: payload)
                        read = try initiator.readMessage(written)
                    }
                    if index == 2 {
                        initiatorTransport = try initiator.transport()
                        responderTransport = try responder.transport()
                    }
                } else if initiatorSends {
                    written = try initiatorTransport!.encrypt(payload)
                    read = try responderTransport!.decrypt(written)
                } else {
                    written = try responderTransport!.encrypt(payload)
                    read = try initiatorTransport!.decrypt(written)
                }
                #expect(written.hex == message.ciphertext, "\(vector.source) message \(index)")
                #expect(read == payload, "\(vector.source) message \(index)")
            }
            if let expected = vector.handshake_hash {
                #expect(initiator.handshakeHash.hex == expected)
                #expect(responder.handshakeHash.hex == expected)
            }
            #expect(initiatorTransport?.remoteStaticKey.hex
                == Array(try privateKey(vector.resp_static).publicKey.rawRepresentation).hex)
            #expect(responderTransport?.remoteStaticKey.hex
                == Array(try privateKey(vector.init_static).publicKey.rawRepresentation).hex)
        }
    }
}
