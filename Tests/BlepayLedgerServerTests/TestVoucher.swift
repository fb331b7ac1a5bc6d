import BlepayLedger
import BlepayProtocol
import Foundation
import LedgerTestSupport

/// A customer's voucher of `limit` minor units, and offline acceptances of requests against it.
struct TestVoucher {
    let ledger: RunningLedger
    let customer: RunningLedger.Party
    let voucher: PreAuthorizationVoucher

    init(_ ledger: RunningLedger, _ customer: RunningLedger.Party, limit: Int64) async throws {
        let reserved = try await customer.client.createPreAuthorization(
            CreatePreAuthorization(instrumentId: customer.instrument!.id, amount: limit, currency: "EUR", lifetimeSeconds: 3_600))
        self.ledger = ledger
        self.customer = customer
        self.voucher = try PreAuthorizationVoucher(encoded: [UInt8](Data(base64Encoded: reserved.voucher)!))
    }

    func pay(_ request: PaymentRequest, sequence: UInt32, spentBefore: UInt64) throws -> (PaymentRequest, PaymentAcceptance) {
        let presentation = try PreAuthorizationPresentation(voucher: voucher, sequence: sequence, spentBeforeMinorUnits: spentBefore)
        return (request, try ledger.acceptance(of: request, by: customer, preAuthorization: presentation))
    }
}
