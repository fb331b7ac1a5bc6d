import Noise

/// What both handshake sides share: the prologue, and how a failure is told to the peer.
enum Handshake {
    /// `blepay/1` and the info characteristic's value as the business read it, so that a tampered negotiation
    /// fails the handshake (§7.2).
    static func prologue(info: [UInt8]) -> [UInt8] { Array("blepay/1".utf8) + info }

    /// Runs a Noise step, reporting its failure as the protocol's `handshake-failed`.
    static func noise<T>(_ step: () throws(NoiseError) -> T) throws(ProtocolError) -> T {
        do {
            return try step()
        } catch {
            throw ProtocolError(.handshakeFailed, error.description)
        }
    }

    /// The peer's plaintext error, as the failure it means here. A body that is no Error is a malformed record, and
    /// its decoding error is thrown: that one is answered with 400, while the peer's own error is not answered (§7.6).
    static func failure(from record: Record) throws(ProtocolError) -> ProtocolError {
        let message = try ErrorMessage(fieldBytes: record.body[...])
        let detail = message.detail.map { ": \($0)" } ?? ""
        return message.code == .versionMismatch
            ? ProtocolError(.unsupportedVersion, "the peer speaks no common version\(detail)")
            : ProtocolError(.handshakeFailed, "the peer failed the handshake with \(message.code.name)\(detail)")
    }
}

extension ProtocolError {
    /// The payment error code a peer is told when this failure ends a session (§7.6).
    public var paymentErrorCode: PaymentErrorCode {
        switch code {
        case .unsupportedVersion: .versionMismatch
        case .handshakeFailed, .decryptionFailed, .invalidCertificate, .certificateExpired, .invalidSignature:
            .securityFailure
        default: .protocolViolation
        }
    }
}

extension Record {
    /// The plaintext Error record a side sends when the handshake fails (§7.1, §7.6).
    public static func plaintextError(for error: ProtocolError, detail: String? = nil) -> Record {
        let message = try! ErrorMessage(
            code: error.paymentErrorCode, paymentID: nil, detail: detail.map { String($0.prefix(PaymentResult.detailLimit)) })
        return Record(kind: .plaintextError, body: message.encoded)
    }
}
