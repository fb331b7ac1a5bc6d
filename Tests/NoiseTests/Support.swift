import Crypto
import Foundation
import TestSupport
import Noise

/// One published test vector for Noise_XX_25519_ChaChaPoly_SHA256 (cacophony / snow format).
struct NoiseVector: Decodable {
    struct Message: Decodable {
        let payload: String
        let ciphertext: String
    }

    let source: String
    let init_prologue: String
    let init_static: String
    let init_ephemeral: String
    let resp_prologue: String
    let resp_static: String
    let resp_ephemeral: String
    let handshake_hash: String?
    let messages: [Message]

    static func loadAll() throws -> [NoiseVector] {
        struct File: Decodable { let vectors: [NoiseVector] }
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Vectors/xx_25519_chachapoly_sha256.json")
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }
}

func privateKey(_ hexString: String) throws -> Curve25519.KeyAgreement.PrivateKey {
    try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](hex: hexString)!)
}

/// A completed handshake between fresh keys, for transport tests.
func handshakePair(prologue: [UInt8] = []) throws -> (initiator: HandshakeState, responder: HandshakeState) {
    var initiator = HandshakeState(role: .initiator, staticKey: .init(), prologue: prologue)
    var responder = HandshakeState(role: .responder, staticKey: .init(), prologue: prologue)
    _ = try responder.readMessage(try initiator.writeMessage(payload: []))
    _ = try initiator.readMessage(try responder.writeMessage(payload: []))
    _ = try responder.readMessage(try initiator.writeMessage(payload: []))
    return (initiator, responder)
}

func noiseError(_ body: () throws -> Void) -> NoiseError.Code? {
    do {
        try body()
        return nil
    } catch let error as NoiseError {
        return error.code
    } catch {
        return nil
    }
}
