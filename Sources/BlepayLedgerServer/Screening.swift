import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Crypto

/// A request's credentials checked before anything costly is done for it: before its body is decoded, its
/// signatures verified or the one-at-a-time write transaction is entered. A forged or unsigned request costs a
/// hash or an HMAC, and at most one read. The request's own transaction authenticates again (spending the nonce,
/// seeing a device revoked meanwhile): the screen only turns away what would be refused anyway.
extension LedgerAPI {
    /// The calling device, for `.device` routes (and `.deviceOrAdmin` ones without the operator's token); nil for the
    /// others. Throws the refusal the transaction would give.
    func screen(_ head: Head, body: [UInt8], access: Access) async throws -> Device? {
        switch access.resolved(for: head) {
        case .anyone:
            return nil
        case .admin:
            guard isAdmin(head) else { throw APIError.unauthenticated }
            return nil
        case .enrollment:
            guard let token = head.bearer, !token.isEmpty else { throw APIError.unauthenticated }
            let (operations, now) = (self.operations, clock())
            _ = try await storage.read { tx in try operations.enrollmentToken(tx, token, at: now) }
            return nil
        case .device, .deviceOrAdmin:
            guard let id = head.device else { throw APIError.unauthenticated }
            let operations = self.operations
            var known = knownDevices.device(id)
            if known == nil {
                known = try await storage.read { tx in try operations.device(tx, id: id).get() }
                known.map(knownDevices.remember)
            }
            guard let device = known else { throw APIError.unauthenticated }
            do {
                _ = try verifiedNonce(head, body: body, device: device, at: clock())
            } catch {
                throw APIError(error)
            }
            return device
        }
    }

    /// Whether the request carries the operator's token (compared by its hash).
    func isAdmin(_ head: Head) -> Bool {
        head.bearer.map { SHA256.hash(data: Array($0.utf8)) == adminTokenHash } ?? false
    }

    /// The request's nonce, once its timestamp is fresh and its MAC is `device`'s; the nonce is not spent here.
    func verifiedNonce(_ head: Head, body: [UInt8], device: Device, at now: Timestamp)
        throws(RequestAuthentication.Failure) -> String
    {
        try RequestAuthentication.verify(
            method: head.method, path: head.path, timestamp: head.timestamp, nonce: head.nonce,
            idempotencyKey: head.idempotencyKey, signature: head.signature, body: body,
            secret: SymmetricKey(data: device.secret), now: Int64(now.millisecondsSince1970 / 1000))
    }
}
