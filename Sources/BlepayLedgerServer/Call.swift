import BlepayLedger
import BlepayLedgerStore
import BlepayProtocol
import Foundation

/// Who may call a route.
enum Access: Sendable {
    /// Anyone: the health check and the ledger's public key.
    case anyone
    /// The operator, with the admin bearer token.
    case admin
    /// A new device, with its account's enrollment bearer token.
    case enrollment
    /// An enrolled device, with an HMAC-signed request.
    case device
    /// An enrolled device, or the operator with the admin bearer token.
    case deviceOrAdmin

    /// The access a request is checked for: for `.deviceOrAdmin`, a device's when it names one, else the operator's.
    func resolved(for head: Head) -> Access {
        guard self == .deviceOrAdmin else { return self }
        return head.device == nil ? .admin : .device
    }
}

/// The authenticated caller of one request.
enum Caller: Sendable {
    case anyone
    case admin
    case enrolling(EnrollmentToken)
    case device(Device)

    /// Whom the operations answer: a device sees its own account's resources, the operator every one.
    var principal: Principal {
        if case .device(let device) = self { return .device(device) }
        return .admin
    }

    /// The scope of the caller's idempotency keys.
    var scope: String {
        switch self {
        case .anyone: "anyone"
        case .admin: "admin"
        case .enrolling(let token): "enrollment:\(token.account)"
        case .device(let device): Self.scope(device: device.id)
        }
    }

    static func scope(device id: String) -> String { "device:\(id)" }
}

/// One request as a route's operation sees it: who called, the body, the path parameters, the time, and the work
/// done on it before the transaction.
struct Call: Sendable {
    let caller: Caller
    let body: [UInt8]
    let parameters: [String: String]
    /// The query string's parameters.
    let queries: [String: String]
    let now: Timestamp
    var anticipated = Anticipation()

    var signatures: CheckedSignatures { anticipated.signatures }

    /// The enrolled device making the call; routes with `.device` access always have one.
    var device: Device {
        get throws(APIError) {
            guard case .device(let device) = caller else { throw APIError.forbidden("this route is for enrolled devices") }
            return device
        }
    }

    var principal: Principal { caller.principal }

    func parameter(_ name: String) -> String { parameters[name] ?? "" }

    func query(_ name: String) -> String? { queries[name] }

    /// An integer query parameter, if given.
    func integer(_ name: String) throws(APIError) -> Int? {
        try query(name).map { text throws(APIError) in
            guard let value = Int(text) else { throw APIError.invalid(name, "wrong-type", "\(name) is an integer") }
            return value
        }
    }

    /// The JSON body as `T`; a wrong or missing field is named by its path.
    func decode<T: Decodable>(_: T.Type) throws(APIError) -> T {
        if let body = anticipated.body as? T { return body }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw APIError(error)
        } catch {
            throw APIError.malformed("the body is not JSON")
        }
    }
}

extension APIError {
    /// A body that is not the resource's JSON: the field it broke at, or a malformed request.
    init(_ error: DecodingError) {
        func path(_ codingPath: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
            (codingPath + (key.map { [$0] } ?? [])).map { $0.intValue.map(String.init) ?? $0.stringValue }
                .joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            self = .invalid(path(context.codingPath, key), "missing", "\(key.stringValue) is required")
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            self = .malformed("the body is not a JSON object")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            self = .invalid(path(context.codingPath), "wrong-type", "\(path(context.codingPath)) has the wrong type")
        case .dataCorrupted(let context) where !context.codingPath.isEmpty:
            self = .invalid(path(context.codingPath), "invalid-value", "\(path(context.codingPath)) has an invalid value")
        default:
            self = .malformed("the body is not JSON")
        }
    }
}
