import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayPayments
import BlepayProtocol
import Foundation

/// The customer's pre-authorizations for payments made while both sides are offline: obtained from the ledger (which
/// moves the limit from the instrument into escrow and signs a voucher for this device), kept in the state file, and
/// voided. A void stops the voucher's use on this device at once, before the ledger hears of it, so that no
/// unreachable ledger keeps a voucher the customer wanted gone in use.
public struct CustomerVouchers: Sendable {
    private let wallet: VoucherWallet
    private let ledger: LedgerClient
    private let clock: @Sendable () -> Timestamp

    public init(wallet: VoucherWallet, ledger: LedgerClient, clock: @escaping @Sendable () -> Timestamp) {
        self.wallet = wallet
        self.ledger = ledger
        self.clock = clock
    }

    /// Asks the ledger for a voucher of `limit` on the instrument, valid `lifetimeSeconds`, and keeps it.
    public func obtain(instrumentID: String, limit: Money, lifetimeSeconds: Int64) async throws(PaymentError)
        -> StoredVoucher
    {
        let body = CreatePreAuthorization(
            instrumentId: instrumentID, amount: Int64(limit.minorUnits), currency: limit.currency.code,
            lifetimeSeconds: lifetimeSeconds)
        let resource: PreAuthorizationResource
        do throws(LedgerClientError) {
            resource = try await ledger.createPreAuthorization(body)
        } catch {
            if case .refused = error { ledger.preAuthorizationAnswered(body) }
            throw error.paymentError
        }
        guard let bytes = Data(base64Encoded: resource.voucher), let voucher = try? PreAuthorizationVoucher(encoded: Array(bytes))
        else {
            ledger.preAuthorizationAnswered(body)
            throw PaymentError(.ledgerError, "the ledger's voucher \(resource.id) cannot be read")
        }
        try walletCall { () throws(WalletError) in try wallet.add(voucher) }
        ledger.preAuthorizationAnswered(body)
        guard let stored = try list().first(where: { $0.voucher.voucherID == voucher.voucherID }) else {
            throw PaymentError(.unexpected, "voucher \(resource.id) was not kept")
        }
        return stored
    }

    /// Every voucher held, soonest to expire first.
    public func list() throws(PaymentError) -> [StoredVoucher] {
        try walletCall { () throws(WalletError) in try wallet.vouchers() }
    }

    /// Stops the voucher's use here, then has the ledger void it. If the ledger cannot be told, the voucher stays
    /// unusable here and the call fails; calling again tells the ledger.
    public func void(_ id: String) async throws(PaymentError) {
        guard let bytes = Hex.decode(id, limit: 8), let voucherID = try? FixedBytes<Bytes8>(bytes) else {
            throw PaymentError(.notFound, "a voucher id is 16 hex digits")
        }
        try walletCall { () throws(WalletError) in try wallet.void(voucherID, at: clock()) }
        do throws(LedgerClientError) {
            _ = try await ledger.voidPreAuthorization(voucherID.description)
        } catch {
            throw error.paymentError
        }
    }

    /// The signer of this device's acceptances: a request whose business is offline is paid under a voucher, its use
    /// on disk before the acceptance is signed, unless `ledgerReachable` says this device executes it itself; any
    /// other as the ledger executes it.
    public func signer(_ key: SigningKey, ledgerReachable: @escaping @Sendable () -> Bool) -> some AcceptanceSigner {
        VoucherSigner(key: key, vouchers: self, ledgerReachable: ledgerReachable)
    }

    /// Whether a voucher could pay something now: what the advertisement's pre-authorization bit says.
    public func holdsUsable() -> Bool {
        let now = clock()
        return ((try? list()) ?? []).contains { $0.isUsable(at: now) }
    }

    fileprivate func present(_ payment: PaymentID, total: Money) throws(PaymentError) -> PreAuthorizationPresentation {
        try walletCall { () throws(WalletError) in try wallet.present(payment, total: total, at: clock()) }
    }

    private func walletCall<T>(_ body: () throws(WalletError) -> T) throws(PaymentError) -> T {
        do throws(WalletError) {
            return try body()
        } catch {
            let code: PaymentErrorCode = switch error.code {
            case .unknownVoucher: .notFound
            case .storage: .unexpected
            case .noVoucher, .insufficient, .alreadySigned, .foreignVoucher: .preAuthorizationInvalid
            }
            throw PaymentError(code, error.description)
        }
    }
}

private struct VoucherSigner: AcceptanceSigner {
    let key: SigningKey
    let vouchers: CustomerVouchers
    let ledgerReachable: @Sendable () -> Bool

    func acceptance(of request: PaymentRequest, terms: AcceptanceTerms, session: PeerSession) throws(PaymentError)
        -> PaymentAcceptance
    {
        // A plain acceptance of an offline request says this device executes it, after the business's go-ahead.
        guard !request.businessOnline, !ledgerReachable() else {
            return try key.acceptance(of: request, terms: terms, session: session)
        }
        let total: Money
        do {
            total = try Money(minorUnits: request.amount.minorUnits + terms.tipMinorUnits, currency: request.amount.currency)
        } catch {
            throw PaymentError(.amountMismatch, error.message)
        }
        return try key.acceptance(
            of: request, terms: terms, session: session, presenting: try vouchers.present(request.paymentID, total: total))
    }
}
