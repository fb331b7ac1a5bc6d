import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Foundation
import LedgerTestSupport
import Testing

/// Devices and their certificates, pre-authorizations and the settlement of offline payments, over HTTP.
@Suite struct PreAuthorizationAPITests {
    @Test(arguments: StorageKind.allCases)
    func aBusinessGetsAMerchantCertificateUnderThePublishedLedgerKey(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let published = try await ledger.admin.with(.none).ledgerKey()
            #expect(published.publicKey == ledger.server.ledgerKey.publicKey.bytes.hex)
            let cafe = try await ledger.merchant()
            let certificate = try MerchantCertificate(encoded: [UInt8](Data(base64Encoded: try #require(cafe.device.certificate))!))
            #expect(certificate.merchantID == cafe.account.id && certificate.signingKey == cafe.key.publicKey)
            #expect(isValidSignature(certificate.signature, of: certificate.signingBytes, by: ledger.server.ledgerKey.publicKey))

            // The same signing key cannot be registered twice; a business device needs its Noise key. (A token enrolls
            // one device: these are tried with a fresh one, which a refused enrollment leaves unused.)
            let token = try #require(try await ledger.admin.issueEnrollmentToken(for: cafe.account.id).token)
            let again = RegisterDevice(name: "till 2", signingKey: cafe.key.publicKey.bytes.hex, noiseKey: String(repeating: "11", count: 32))
            await #expect(throws: LedgerClientError.self) { try await ledger.admin.with(.bearer(token)).enroll(again) }
            let noNoise = RegisterDevice(name: "till 3", signingKey: SigningKey().publicKey.bytes.hex, noiseKey: nil)
            do {
                _ = try await ledger.admin.with(.bearer(token)).enroll(noNoise)
                Issue.record("a business device enrolled without its Noise key")
            } catch let error as LedgerClientError {
                guard case .refused(400, let detail) = error else { throw error }
                #expect(detail.fields?.first?.path == "noiseKey")
            }
        }
    }

    @Test(arguments: StorageKind.allCases)
    func offlinePaymentsSettleOnceAgainstTheVoucherAndVoidingStopsNewUse(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let cafe = try await ledger.merchant()
            let alice = try await ledger.customer(balance: 10_000)
            let card = alice.instrument!.id
            let reserved = try await alice.client.createPreAuthorization(
                CreatePreAuthorization(instrumentId: card, amount: 3_000, currency: "EUR", lifetimeSeconds: 3_600))
            #expect(reserved.state == .available && reserved.limit == 3_000 && reserved.spent == 0)
            let voucher = try PreAuthorizationVoucher(encoded: [UInt8](Data(base64Encoded: reserved.voucher)!))
            #expect(isValidSignature(voucher.signature, of: voucher.signingBytes, by: ledger.server.ledgerKey.publicKey))
            // The limit moves into the pre-authorization's escrow book until it is spent, voided or expired.
            #expect(try await alice.client.instruments().first?.balances.first == BalanceResource(currency: "EUR", posted: 7_000, held: 0))

            func offline(_ amount: UInt64, sequence: UInt32, spentBefore: UInt64, signer: SigningKey? = nil) throws
                -> (PaymentRequest, PaymentAcceptance)
            {
                let request = try ledger.request(by: cafe, amount: amount, online: false)
                let presentation = try PreAuthorizationPresentation(voucher: voucher, sequence: sequence, spentBeforeMinorUnits: spentBefore)
                return (request, try ledger.acceptance(of: request, by: alice, preAuthorization: presentation, signer: signer))
            }
            let first = try offline(1_000, sequence: 1, spentBefore: 0)
            let second = try offline(1_500, sequence: 2, spentBefore: 1_000)
            let tooMuch = try offline(900, sequence: 3, spentBefore: 2_500)
            let forged = try offline(100, sequence: 4, spentBefore: 2_500, signer: SigningKey())
            let results = try await cafe.client.settle([first, second, tooMuch, forged], operation: "batch-1")
            #expect(results.results.map(\.result) == [.settled, .settled, .voucherExceeded, .badSignature])
            #expect(results.results[0].paymentId == first.0.paymentID.description)

            // A later batch with the same payments moves nothing again.
            let replay = try await cafe.client.settle([first], operation: "batch-2")
            #expect(replay.results.map(\.result) == [.alreadySettled])
            #expect(try await ledger.admin.account(cafe.account.id).balances.first?.posted == 2_500)

            let voided = try await alice.client.voidPreAuthorization(reserved.id)
            #expect(voided.state == .voided && voided.spent == 2_500)
            // The rest stays in escrow until the voucher's release (VoidedVoucherTests).
            #expect(try await alice.client.instruments().first?.balances.first == BalanceResource(currency: "EUR", posted: 7_000, held: 0))
            let late = try offline(100, sequence: 3, spentBefore: 2_500)
            #expect(try await cafe.client.settle([late], operation: "batch-3").results.map(\.result) == [.voucherVoided])
            #expect(try await ledger.server.audit() == [])
        }
    }

    @Test(arguments: StorageKind.allCases)
    func aPreAuthorizationBeyondTheBalanceOrLifetimeIsRefused(kind: StorageKind) async throws {
        try await RunningLedger.with(kind) { ledger in
            let alice = try await ledger.customer(balance: 1_000)
            let card = alice.instrument!.id
            do {
                _ = try await alice.client.createPreAuthorization(
                    CreatePreAuthorization(instrumentId: card, amount: 5_000, currency: "EUR", lifetimeSeconds: 3_600))
                Issue.record("reserved more than the balance")
            } catch let error as LedgerClientError { #expect(error.paymentError.code == .insufficientFunds) }
            do {
                _ = try await alice.client.createPreAuthorization(
                    CreatePreAuthorization(instrumentId: card, amount: 500, currency: "EUR", lifetimeSeconds: 1))
                Issue.record("accepted a one-second lifetime")
            } catch let error as LedgerClientError {
                guard case .refused(400, let detail) = error else { throw error }
                #expect(detail.fields?.first?.path == "lifetimeSeconds")
            }
            #expect(try await alice.client.instruments().first?.balances.first?.posted == 1_000)
        }
    }
}
