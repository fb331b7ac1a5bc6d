import BlepayPayments
import BlepayProtocol

/// The customer's acceptances, signed with its device key and bound to the session with the business that asked
/// (`docs/protocol.md` §7.5).
public struct SessionAcceptanceSigner: AcceptanceSigner {
    private let transport: CustomerTransport
    private let deviceKey: SigningKey

    public init(transport: CustomerTransport, deviceKey: SigningKey) {
        self.transport = transport
        self.deviceKey = deviceKey
    }

    public func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, peer: PeerID) throws(PaymentError)
        -> PaymentAcceptance
    {
        guard let session = transport.session(of: peer) else {
            throw PaymentError(.connectionFailed, "the business is no longer connected")
        }
        do {
            return try session.accept(
                request, tipMinorUnits: terms.tipMinorUnits, instrumentID: terms.instrumentID,
                delegatedInstrument: terms.delegatedInstrument, at: terms.acceptedAt, preAuthorization: nil,
                deviceKey: deviceKey)
        } catch {
            throw PaymentError(.unexpected, "signing the acceptance failed: \(error)")
        }
    }
}

/// The business's check that an acceptance was signed for the request it sent, in the session it came over.
public struct SessionAcceptanceVerifier: AcceptanceVerifier {
    private let transport: BusinessTransport

    public init(transport: BusinessTransport) { self.transport = transport }

    public func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, from peer: PeerID) -> PaymentError? {
        guard let session = transport.session(of: peer) else {
            return PaymentError(.connectionFailed, "the customer is no longer connected")
        }
        do {
            try session.verify(acceptance, of: request)
            return nil
        } catch {
            return PaymentError(error.paymentErrorCode, error.description)
        }
    }
}
