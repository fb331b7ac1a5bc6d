import BlepayLedger
import BlepayProtocol
import Foundation

/// Double spends: a voucher's device key signed two acceptances that cannot both be paid. The one settled first is
/// paid; the other is refused and both are kept, signed, as the proof. A device key with a proof is blocked: no more
/// vouchers, no more online acceptances, and it is on the deny list offline businesses fetch.
extension LedgerOperations {
    /// Keeps the proof of the double spend `acceptance` (refused) commits against the settled payment it conflicts
    /// with, once per refused payment.
    func recordDoubleSpend(_ tx: any SQLTransaction, _ doubleSpend: PreAuthorization.DoubleSpend, request: PaymentRequest,
        acceptance: PaymentAcceptance, preAuthorization: PreAuthorization, at now: Timestamp) throws
    {
        let voucher = preAuthorization.voucher.voucherID.description
        let payment = request.paymentID.description
        guard try tx.row("SELECT 1 FROM double_spends WHERE pre_authorization = ? AND merchant = ? AND payment = ?",
            [.text(voucher), .text(request.merchantID), .text(payment)]) == nil
        else { return }
        guard let settled = try tx.row(
            "SELECT acceptance FROM pre_authorization_uses WHERE pre_authorization = ? AND merchant = ? AND payment = ?",
            [.text(voucher), .text(doubleSpend.settled.merchant), .text(doubleSpend.settled.id.description)])
        else { throw StorageError(.corrupt, "pre-authorization \(voucher) lost the use of payment \(doubleSpend.settled.id)") }
        try tx.run(
            """
            INSERT INTO double_spends (id, pre_authorization, device_key, kind, merchant, payment, request, acceptance,
                settled_merchant, settled_payment, settled_acceptance, detected_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(Self.randomID("dsp_")), .text(voucher), .blob(preAuthorization.voucher.customerKey.bytes),
             .text(doubleSpend.kind.rawValue), .text(request.merchantID), .text(payment), .blob(request.encoded),
             .blob(acceptance.encoded), .text(doubleSpend.settled.merchant), .text(doubleSpend.settled.id.description),
             .blob(try settled.blob(0)), now.sqlValue])
    }

    /// Refuses a device key caught double spending (`ledger.device-blocked`).
    func refuseBlocked(_ tx: any SQLTransaction, _ key: Key32) throws -> Pending<Void> {
        try tx.send("SELECT 1 FROM double_spends WHERE device_key = ?", [.blob(key.bytes)]).map { result in
            guard result.rows.isEmpty else { throw APIError.doubleSpender }
        }
    }

    /// Every proof, oldest first, for the operator.
    public func doubleSpends(_ tx: any SQLTransaction) throws -> DoubleSpendList {
        let base64 = { (bytes: [UInt8]) in Data(bytes).base64EncodedString() }
        return DoubleSpendList(doubleSpends: try tx.rows(
            """
            SELECT id, pre_authorization, device_key, kind, merchant, payment, request, acceptance, settled_merchant,
                settled_payment, settled_acceptance, detected_at FROM double_spends ORDER BY detected_at, id
            """, [])
        .map { row in
            guard let kind = PreAuthorization.Settlement(rawValue: try row.text(3)), kind.isDoubleSpend else {
                throw StorageError(.corrupt, "double spend \(try row.text(0))")
            }
            return DoubleSpendResource(
                id: try row.text(0), voucherId: try row.text(1), deviceKey: try row.blob(2).hex, kind: kind,
                merchantId: try row.text(4), paymentId: try row.text(5), request: base64(try row.blob(6)),
                acceptance: base64(try row.blob(7)), settledMerchantId: try row.text(8), settledPaymentId: try row.text(9),
                settledAcceptance: base64(try row.blob(10)), detectedAt: UInt64(try row.integer(11)))
        })
    }

    /// The signed deny list as of `now`: vouchers voided and not yet released, and blocked device keys.
    public func denyList(_ tx: any SQLTransaction, at now: Timestamp) throws -> DenyListResource {
        let (vouchers, keys) = try denied(tx)
        let list: DenyList
        do {
            list = try DenyList(issuedAt: now, voidedVouchers: vouchers, blockedKeys: keys,
                ledgerKeyID: TrustedLedgerKeys.keyID(of: ledgerKey.publicKey), signature: .unsigned).signed(by: ledgerKey)
        } catch { throw StorageError(.corrupt, "the deny list: \(error)") }
        return DenyListResource(list, base64: Data(list.encoded).base64EncodedString())
    }

    /// What the deny list holds: the vouchers voided and not released, and the blocked device keys (a key may repeat).
    func denied(_ tx: any SQLTransaction) throws -> (vouchers: [FixedBytes<Bytes8>], keys: [Key32]) {
        let vouchers = try tx.rows("SELECT id FROM pre_authorizations WHERE state = 'voided' AND released_at IS NULL", [])
            .map { row in
                guard let bytes = Hex.decode(try row.text(0), limit: 8), let id = try? FixedBytes<Bytes8>(bytes) else {
                    throw StorageError(.corrupt, "pre-authorization \(try row.text(0))")
                }
                return id
            }
        let doubleSpenders = try tx.rows("SELECT DISTINCT device_key FROM double_spends", []).map { row in
            guard let key = try? Key32(try row.blob(0)) else { throw StorageError(.corrupt, "a double spend's device key") }
            return key
        }
        // Repeats are dropped by the list itself.
        return (vouchers, doubleSpenders + (try deniedDeviceKeys(tx)))
    }

    /// Every proof must stand on its own (both acceptances signed by the voucher's device key, presenting the voucher,
    /// conflicting as stated, the settled one settled), and every double spend a settlement answered (as its stored
    /// answer shows, while it is kept) must have its proof: for that merchant's payment id, since another merchant's
    /// payment of the id is another payment.
    func auditDoubleSpends(_ tx: any SQLTransaction) throws -> [String] {
        var problems: [String] = []
        for row in try tx.rows(
            """
            SELECT d.id, d.kind, d.device_key, d.acceptance, d.settled_acceptance, p.voucher,
                (SELECT COUNT(*) FROM pre_authorization_uses u WHERE u.pre_authorization = d.pre_authorization
                    AND u.merchant = d.settled_merchant AND u.payment = d.settled_payment)
            FROM double_spends d JOIN pre_authorizations p ON p.id = d.pre_authorization ORDER BY d.id
            """, [])
        {
            let id = try row.text(0)
            guard let voucher = try? PreAuthorizationVoucher(encoded: try row.blob(5)),
                let refused = try? PaymentAcceptance(encoded: try row.blob(3)),
                let settled = try? PaymentAcceptance(encoded: try row.blob(4)),
                try row.blob(2) == voucher.customerKey.bytes,
                [refused, settled].allSatisfy({ acceptance in
                    acceptance.customerKey == voucher.customerKey && acceptance.preAuthorization?.voucher == voucher
                        && isValidSignature(acceptance.signature, of: acceptance.signingBytes, by: voucher.customerKey)
                }),
                let claim = PreAuthorization.claim(of: refused), let other = PreAuthorization.claim(of: settled),
                claim.conflict(with: other)?.rawValue == (try row.text(1))
            else {
                problems.append("double spend \(id) is not a proof: its acceptances are not two conflicting uses signed by the voucher's key")
                continue
            }
            if try row.integer(6) != 1 { problems.append("double spend \(id) conflicts with a payment that was not settled") }
        }
        // An answer stored before answers named their merchant is the answering device's: a business device settles
        // only its merchant's payments; a customer's device, only its own acceptances, so the proof is against its key.
        var unproven = Set<String>()
        for row in try tx.rows(
            """
            SELECT k.principal, k.response, a.kind, a.id, d.signing_key FROM idempotency_keys k
            LEFT JOIN devices d ON k.principal = 'device:' || d.id LEFT JOIN accounts a ON a.id = d.account
            """, [])
        {
            let answer = try? JSONDecoder().decode(SettlementResults.self, from: Data(try row.blob(1)))
            let answeringMerchant = try row.optionalText(2) == CreateAccount.Kind.merchant.rawValue ? try row.optionalText(3) : nil
            for item in answer?.results ?? [] where item.result.isDoubleSpend {
                guard let payment = item.paymentId else { continue }
                let (name, proof) = if let merchant = item.merchantId ?? answeringMerchant {
                    ("payment \(payment) of merchant \(merchant)",
                     try tx.row("SELECT 1 FROM double_spends WHERE merchant = ? AND payment = ?", [.text(merchant), .text(payment)]))
                } else {
                    ("payment \(payment) settled by \(try row.text(0))",
                     try tx.row("SELECT 1 FROM double_spends WHERE device_key = ? AND payment = ?", [row.values[4], .text(payment)]))
                }
                if proof == nil { unproven.insert(name) }
            }
        }
        return problems + unproven.sorted().map { "\($0) was refused as a double spend without a stored proof" }
    }
}

extension APIError {
    /// A device key caught double spending pays no more.
    static var doubleSpender: APIError { APIError(LedgerError(.deviceBlocked, "this device signed a double spend")) }
}
