import BlepayLedger
import BlepayLedgerStore
import Foundation

/// The operator's credential work from the command line (`blepay-ledger accounts`, `revoke-device`, ...): the same
/// operations as the admin routes, run on the ledger's database directly, like the audit, so it works whether or
/// not the server is up.
public enum Administration: Sendable {
    case accounts(kind: String?, limit: Int, after: String?)
    case devices(account: String)
    case issueToken(account: String)
    case revoke(device: String)
    case block(account: String, blocked: Bool)
}

extension LedgerServer {
    /// Carries out `command` in one transaction and answers with the JSON the admin route would; a refusal is
    /// thrown as its `APIError`.
    public func administer(_ command: Administration) async throws -> String {
        let operations = api.operations
        let now = api.clock()
        let body = try await storage.write { tx -> [UInt8] in
            switch command {
            case .accounts(let kind, let limit, let after):
                return try LedgerAPI.encode(operations.accounts(tx, kind: try kind.map(LedgerOperations.accountKind),
                    limit: limit, after: after))
            case .devices(let account): return try LedgerAPI.encode(operations.devices(tx, account: account))
            case .issueToken(let account): return try LedgerAPI.encode(operations.issueEnrollmentToken(tx, account: account, at: now))
            case .revoke(let device): return try LedgerAPI.encode(operations.revoke(tx, device: device, at: now))
            case .block(let account, let blocked):
                return try LedgerAPI.encode(operations.block(tx, account: account, blocked: blocked, at: now))
            }
        }
        return String(decoding: body, as: UTF8.self)
    }
}
