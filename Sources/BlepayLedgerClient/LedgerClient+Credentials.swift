import BlepayLedger
import Foundation

/// The operator's credential calls (bearer: the admin token): enrollment tokens, the account and device lists,
/// blocking accounts and revoking devices.
extension LedgerClient {
    public func issueEnrollmentToken(for account: String) async throws(LedgerClientError) -> EnrollmentTokenResource {
        try await post("/v1/accounts/\(account)/enrollment-tokens", Empty())
    }

    public func accounts(kind: CreateAccount.Kind? = nil, limit: Int? = nil, after: String? = nil)
        async throws(LedgerClientError) -> AccountList
    {
        let query = [kind.map { "kind=\($0.rawValue)" }, limit.map { "limit=\($0)" }, after.map { "after=\($0)" }]
            .compactMap { $0 }.joined(separator: "&")
        return try await get("/v1/accounts" + (query.isEmpty ? "" : "?" + query))
    }

    public func devices(of account: String) async throws(LedgerClientError) -> [EnrolledDevice] {
        try await get("/v1/accounts/\(account)/devices", as: DeviceList.self).devices
    }

    public func revoke(device: String) async throws(LedgerClientError) -> EnrolledDevice {
        try await post("/v1/devices/\(device)/revoke", Empty())
    }

    public func block(account: String, _ blocked: Bool = true) async throws(LedgerClientError) -> AccountResource {
        try await post("/v1/accounts/\(account)/\(blocked ? "block" : "unblock")", Empty())
    }
}
