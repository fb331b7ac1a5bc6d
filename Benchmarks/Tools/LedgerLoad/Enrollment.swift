import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Crypto
import Foundation

/// The parties a load needs, made as the ledger's own tests make them (RunningLedger.merchant and .customer),
/// through the API: an account, a device enrolled with a fresh key, and for a customer a funded card.
struct Enrollment: Sendable {
    /// An enrolled device with its key and a client for it per ledger process.
    struct Party: Sendable {
        let account: AccountResource
        let key: SigningKey
        let clients: [LedgerClient]
        let instrument: String?
    }

    let admin: LedgerClient
    /// A client per ledger process, signing as a device.
    let clients: @Sendable (LedgerClient.Credentials) -> [LedgerClient]

    func merchant(_ name: String) async throws -> Party { try await enroll(.merchant, name) }

    func customer(_ name: String) async throws -> Party { try await enroll(.customer, name) }

    /// `count` parties made by `make(index)`, `width` at a time.
    func parties(_ count: Int, width: Int = 8, _ make: @escaping @Sendable (Int) async throws -> Party) async throws -> [Party] {
        try await withThrowingTaskGroup(of: (Int, Party).self) { group in
            var made: [Party?] = Array(repeating: nil, count: count)
            for index in 0..<count {
                if index >= width, let done = try await group.next() { made[done.0] = done.1 }
                group.addTask { (index, try await make(index)) }
            }
            for try await (index, party) in group { made[index] = party }
            return made.map { $0! }
        }
    }

    private func enroll(_ kind: CreateAccount.Kind, _ name: String) async throws -> Party {
        let account = try await admin.createAccount(CreateAccount(kind: kind, name: name))
        let key = SigningKey()
        let noiseKey = kind == .merchant ? SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }.hex : nil
        let device = try await admin.with(.bearer(account.enrollmentToken!)).enroll(
            RegisterDevice(name: kind == .merchant ? "till" : "phone", signingKey: key.publicKey.bytes.hex, noiseKey: noiseKey))
        guard let secret = device.secret.flatMap({ Data(base64Encoded: $0) }) else {
            throw LoadError("the ledger enrolled \(name)'s device without a secret")
        }
        let clients = clients(.device(id: device.id, secret: SymmetricKey(data: secret)))
        guard kind == .customer else { return Party(account: account, key: key, clients: clients, instrument: nil) }
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 3
        let card = try await clients[0].addInstrument(CreateInstrument(card: .init(
            number: "4242424242424242", expiryMonth: 12, expiryYear: year, cvc: "123")))
        _ = try await admin.deposit(Deposit(amount: 1_000_000_000_000, currency: "EUR"), into: card.id)
        return Party(account: account, key: key, clients: clients, instrument: card.id)
    }
}
