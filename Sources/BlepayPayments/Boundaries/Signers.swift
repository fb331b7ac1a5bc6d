import BlepayProtocol

/// Signs what the business signs: its requests, and its acknowledgement of a payment it keeps for settlement (a
/// pending receipt); the merchant's signing key, vouched for by its certificate.
public protocol RequestSigner: Sendable {
    func sign(_ request: PaymentRequest) throws(PaymentError) -> PaymentRequest
    func acknowledge(_ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp)
        throws(PaymentError) -> Receipt
}

/// Builds the customer's signed acceptance of a request, bound to the session it was shown in (`docs/protocol.md`
/// §7.5). Pure: the session's facts come with the action, not from the transport.
public protocol AcceptanceSigner: Sendable {
    func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, session: PeerSession) throws(PaymentError)
        -> PaymentAcceptance
}

/// Checks an acceptance against the request it answers and the session it came over. Pure and injected, so that
/// tests can refuse at will; `SignatureVerifier` is the real one.
public protocol AcceptanceVerifier: Sendable {
    func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, session: PeerSession) -> PaymentError?
}

extension SigningKey: RequestSigner, AcceptanceSigner {
    public func sign(_ request: PaymentRequest) throws(PaymentError) -> PaymentRequest {
        do {
            return try request.signed(by: self)
        } catch {
            throw PaymentError(.unexpected, "signing the request failed: \(error)")
        }
    }

    public func acknowledge(_ request: PaymentRequest, _ acceptance: PaymentAcceptance, at now: Timestamp)
        throws(PaymentError) -> Receipt
    {
        do {
            return try Receipt.pending(request, acceptance, at: now, signedBy: self)
        } catch {
            throw PaymentError(.unexpected, "signing the acknowledgement failed: \(error)")
        }
    }

    /// The device key's acceptance, bound to the request's hash and the session's.
    public func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, session: PeerSession)
        throws(PaymentError) -> PaymentAcceptance
    {
        try acceptance(of: request, terms: terms, session: session, presenting: nil)
    }

    /// The same, under a pre-authorization when one is presented: it pays from the voucher's instrument.
    public func acceptance(
        of request: PaymentRequest, terms: AcceptanceTerms, session: PeerSession,
        presenting presentation: PreAuthorizationPresentation?
    ) throws(PaymentError) -> PaymentAcceptance {
        do {
            return try PaymentAcceptance(
                paymentID: request.paymentID, amount: request.amount, tipMinorUnits: terms.tipMinorUnits,
                instrumentID: presentation?.voucher.instrumentID ?? terms.instrumentID,
                delegatedInstrument: presentation == nil && terms.delegatedInstrument,
                createdAt: terms.acceptedAt, requestHash: request.hash, sessionHash: session.sessionHash,
                customerKey: publicKey, preAuthorization: presentation, signature: .unsigned
            ).signed(by: self)
        } catch {
            throw PaymentError(.unexpected, "signing the acceptance failed: \(error)")
        }
    }
}

/// The business's check that an acceptance was signed, by the key it names, for exactly the request it sent and in
/// the session it came over.
public struct SignatureVerifier: AcceptanceVerifier {
    public init() {}

    public func verify(_ acceptance: PaymentAcceptance, of request: PaymentRequest, session: PeerSession)
        -> PaymentError?
    {
        guard acceptance.paymentID == request.paymentID, acceptance.requestHash == request.hash else {
            return PaymentError(.securityFailure, "the acceptance is for another request")
        }
        guard acceptance.sessionHash == session.sessionHash else {
            return PaymentError(.securityFailure, "the acceptance was made in another session")
        }
        guard isValidSignature(acceptance.signature, of: acceptance.signingBytes, by: acceptance.customerKey) else {
            return PaymentError(.securityFailure, "the acceptance's signature does not verify")
        }
        return nil
    }
}
