import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Foundation
import Synchronization
import LedgerTestSupport
import Testing

/// The daemons' client: durable idempotency keys, retries, and the mapping to the payment error taxonomy.
@Suite struct ClientTests {
    func keyStore() throws -> IdempotencyKeyStore {
        try IdempotencyKeyStore(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("blepay-keys-\(UUID().uuidString)").path)
    }

    @Test func aKeyIsStoredBeforeUseAndSurvivesUntilForgotten() throws {
        let store = try keyStore()
        defer { try? FileManager.default.removeItem(atPath: store.directory) }
        let key = try store.key(for: "accept-01")
        // Another process (the daemon after a restart) finds the same key.
        #expect(try IdempotencyKeyStore(directory: store.directory).key(for: "accept-01") == key)
        #expect(try store.key(for: "accept-02") != key)
        store.forget("accept-01")
        #expect(try store.key(for: "accept-01") != key)
    }

    /// Callers asking at once for the same operation's first key all get one key: two keys would let the retry of
    /// one caller's request execute again. Each caller wrote the key to the same temporary file and renamed it into
    /// place, so a later writer replaced a key an earlier caller had already been given.
    @Test func callersAskingAtOnceGetOneKey() throws {
        let store = try keyStore()
        defer { try? FileManager.default.removeItem(atPath: store.directory) }
        let operations = 200, callers = 4
        let keys = Mutex([[String]](repeating: [], count: operations))
        DispatchQueue.concurrentPerform(iterations: operations * callers) { index in
            let operation = index / callers
            let key = (try? store.key(for: "accept-\(operation)")) ?? "failed"
            keys.withLock { $0[operation].append(key) }
        }
        for (operation, given) in keys.withLock({ $0 }).enumerated() {
            #expect(Set(given).count == 1, "operation \(operation): \(given)")
            #expect(try store.key(for: "accept-\(operation)") == given.first)
        }
        // Nothing but the keys is left in the directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).count == operations)
    }

    @Test(arguments: StorageKind.allCases)
    func anAcceptanceRetriedAfterACrashReusesItsKeyAndExecutesOnce(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let store = try keyStore()
            defer { try? FileManager.default.removeItem(atPath: store.directory) }
            let request = try ledger.request(by: cafe, amount: 1_200)
            let acceptance = try ledger.acceptance(of: request, by: alice)

            // The first attempt reached the ledger, but its answer was lost with the process that sent it.
            let operation = "accept-\(request.paymentID)-\(acceptance.signature.bytes.prefix(8).hex)"
            let key = try store.key(for: operation)
            let path = "/v1/payments/\(request.paymentID)/acceptance"
            let body = try LedgerClient.encode(AcceptPayment(
                acceptance: Data(acceptance.encoded).base64EncodedString(), request: Data(request.encoded).base64EncodedString()))
            #expect(try await ledger.raw("POST", path,
                headers: ledger.signed("POST", path, body: body, device: cafe.device, idempotencyKey: key), body: body).status == 200)

            let client = LedgerClient(baseURL: ledger.baseURL, credentials: cafe.client.credentials, keys: store,
                retry: .init(attempts: 1), logger: testLogger)
            let outcome = await LedgerBackend(client: client).execute(request, acceptance)
            guard case .executed(let receipt) = outcome else { Issue.record("\(outcome)"); return }
            #expect(receipt.paymentID == request.paymentID)
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 8_800)
            // The outcome is final: the key is gone.
            #expect(try store.key(for: operation) != key)
        }
    }

    /// A refusal is the ledger's final answer, as a success is. The key of a refused operation stayed on disk for
    /// good, and the same acceptance sent again once the customer's card held enough was answered with the stored
    /// refusal (`ledger.insufficient-funds`) instead of being carried out.
    @Test(arguments: StorageKind.allCases)
    func aRefusedOperationForgetsItsKeySoTheSameOneAskedLaterIsCarriedOut(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 500)
            let store = try keyStore()
            defer { try? FileManager.default.removeItem(atPath: store.directory) }
            let request = try ledger.request(by: cafe, amount: 1_200)
            let acceptance = try ledger.acceptance(of: request, by: alice)
            let client = LedgerClient(baseURL: ledger.baseURL, credentials: cafe.client.credentials, keys: store,
                retry: .init(attempts: 1), logger: testLogger)
            do throws(LedgerClientError) {
                let payment = try await client.accept(acceptance, request: request)
                Issue.record("1,200 paid from a card holding 500: \(payment)")
            } catch {
                guard case .refused = error else { throw error }
                #expect(error.code == "ledger.insufficient-funds", "\(error)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)

            _ = try await ledger.admin.deposit(Deposit(amount: 1_000, currency: "EUR"), into: alice.instrument!.id)
            let payment = try await client.accept(acceptance, request: request)
            #expect(payment.status == .settled, "\(payment)")
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 300)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
        }
    }

    /// A card added again after the first try's answer was lost (the control call answered `ledger-offline`, the
    /// ledger had made the card) was a second instrument: each try was a new operation.
    @Test(arguments: StorageKind.allCases)
    func aCardAddedAgainAfterALostAnswerIsTheInstrumentTheFirstTryMade(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 0)
            let store = try keyStore()
            defer { try? FileManager.default.removeItem(atPath: store.directory) }
            guard case .device(_, let secret) = alice.client.credentials else {
                Issue.record("a customer's client signs as its device")
                return
            }
            let body = CreateInstrument(card: .init(number: "5555555555554444", expiryMonth: 6,
                expiryYear: Calendar(identifier: .gregorian).component(.year, from: Date()) + 2, cvc: "321"))

            // The first try reached the ledger, and its answer was lost.
            let key = try store.key(for: LedgerClient.operation(adding: body, secret: secret))
            #expect(try !FileManager.default.contentsOfDirectory(atPath: store.directory).contains { $0.contains("5555") })
            let bytes = try LedgerClient.encode(body)
            let first = try await ledger.raw("POST", "/v1/instruments",
                headers: ledger.signed("POST", "/v1/instruments", body: bytes, device: alice.device, idempotencyKey: key),
                body: bytes)
            #expect(first.status == 201, "\(first.status)")
            let made = try JSONDecoder().decode(InstrumentResource.self, from: Data(first.body))

            let client = LedgerClient(baseURL: ledger.baseURL, credentials: alice.client.credentials, keys: store,
                retry: .init(attempts: 1), logger: testLogger)
            #expect(try await client.addInstrument(body).id == made.id)
            #expect(try await alice.client.instruments().count == 2)
            #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).isEmpty)
        }
    }

    @Test func anUnreachableLedgerIsUnavailableAfterTheRetriesAndTheKeyIsKept() async throws {
        let store = try keyStore()
        defer { try? FileManager.default.removeItem(atPath: store.directory) }
        let client = LedgerClient(baseURL: "http://127.0.0.1:9", credentials: .none, keys: store,
            retry: .init(attempts: 3, firstDelay: .milliseconds(10), timeout: .seconds(1)), logger: testLogger)
        let key = try store.key(for: "op")
        do {
            _ = try await client.post("/v1/accounts", ["kind": "customer"], operation: "op", as: AccountResource.self)
            Issue.record("reached a closed port")
        } catch {
            guard case .unavailable = error else { throw error }
            #expect(error.paymentError.code == .ledgerOffline)
        }
        #expect(try store.key(for: "op") == key)
    }

    /// A daemon that stops while a call is out gives the call up: `ledger.cancelled`, whose outcome is unknown. It was
    /// `ledger.unavailable`, so every service of a stopping daemon logged the ledger as gone.
    @Test func aCallGivenUpByItsCallerIsCancelledNotUnavailable() async throws {
        try await RunningLedger.with(.sqlite) { ledger in
            let cafe = try await ledger.merchant()
            let first = try await cafe.client.changes(after: nil, wait: 30)
            func givenUp(cancelling: Bool) -> Task<LedgerClientError?, Never> {
                Task {
                    if cancelling { withUnsafeCurrentTask { $0?.cancel() } }
                    do throws(LedgerClientError) {
                        _ = try await cafe.client.changes(after: first.token, wait: 30)
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            // Cancelled before it was sent, and while the ledger holds it (nothing changes for 30 s).
            let early = givenUp(cancelling: true)
            let held = givenUp(cancelling: false)
            try await Task.sleep(for: .milliseconds(300))
            held.cancel()
            for call in [early, held] {
                let error = try #require(await call.value)
                #expect(error.code == "ledger.cancelled")
                #expect(error.paymentError.code == .outcomeUnknown)
            }
        }
    }

    @Test func refusalsMapToThePaymentErrorTaxonomy() {
        func refused(_ status: Int, _ paymentError: String?) -> PaymentErrorCode {
            LedgerClientError.refused(status: status, ErrorBody.Detail(code: "x", message: "m", fields: nil,
                paymentError: paymentError)).paymentError.code
        }
        #expect(refused(422, "insufficient-funds") == .insufficientFunds)
        #expect(refused(422, "blocked") == .blocked)
        #expect(refused(401, nil) == .invalidCredentials)
        // A request signed too far from the ledger's clock is this device's clock, not its credentials.
        let stale = LedgerClientError.refused(status: 401, ErrorBody.Detail(
            code: "auth.stale-timestamp", message: "m", fields: nil, paymentError: nil))
        #expect(stale.paymentError.code == .clockSkew)
        #expect(refused(404, nil) == .notFound)
        #expect(refused(400, nil) == .ledgerError)
        #expect(LedgerClientError.invalidResponse("?").paymentError.code == .ledgerError)
    }
}
