import BlepayProtocol

/// Signs the business's requests: the merchant's signing key, vouched for by its certificate.
public protocol RequestSigner: Sendable {
    func sign(_ request: PaymentRequest) throws(PaymentError) -> PaymentRequest
}

/// Builds the customer's signed acceptance of a request on one connection; the BLE transport binds it to that
/// connection's session (`SecureSession.accept`).
public protocol AcceptanceSigner: Sendable {
    func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, peer: PeerID) throws(PaymentError)
        -> PaymentAcceptance
}

extension SigningKey: RequestSigner {
    public func sign(_ request: PaymentRequest) throws(PaymentError) -> PaymentRequest {
        do {
            return try request.signed(by: self)
        } catch {
            throw PaymentError(.unexpected, "signing the request failed: \(error)")
        }
    }
}
