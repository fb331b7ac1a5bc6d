import BlepayLedger
import BlepayProtocol
import Foundation

/// Pre-authorizations for offline payments, and the settlement of those payments when a side is back online.
extension LedgerOperations {
    public func createPreAuthorization(_ tx: any SQLTransaction, _ body: CreatePreAuthorization, device: Device,
        at now: Timestamp) throws -> PreAuthorizationResource
    {
        guard device.accountKind == .customer else { throw APIError.forbidden("only customer devices pre-authorize") }
        try refuseBlocked(tx, device.signingKey).get()
        let limit = try Self.money(body.amount, body.currency)
        guard preAuthorizationLifetimes.contains(body.lifetimeSeconds) else {
            throw APIError.invalid("lifetimeSeconds", "out-of-range",
                "a pre-authorization lasts \(preAuthorizationLifetimes.lowerBound) to \(preAuthorizationLifetimes.upperBound) s")
        }
        let instrument = try instrument(tx, body.instrumentId, account: device.account)
        guard !instrument.blocked else { throw APIError(LedgerError(.blocked, "the instrument is blocked")) }
        let id = try FixedBytes<Bytes8>(Self.randomBytes(8))
        var journal = try Books.load(tx, books: [Self.instrumentBook(instrument.id)])
        let preAuthorization: PreAuthorization
        do {
            preAuthorization = try PreAuthorization.issue(
                id: id, instrumentID: instrument.id, customerKey: device.signingKey, customer: Self.instrumentBook(instrument.id),
                limit: limit, lifetimeMilliseconds: UInt64(body.lifetimeSeconds) * 1000,
                graceMilliseconds: preAuthorizationGraceMilliseconds, at: now, ledgerKey: ledgerKey, journal: &journal)
        } catch { throw APIError(error) }
        try Books.save(tx, journal, at: now)
        try tx.run(
            """
            INSERT INTO pre_authorizations (id, account, instrument, voucher, state, expires_at, release_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(id.description), .text(device.account), .text(instrument.id), .blob(preAuthorization.voucher.encoded),
             .text(preAuthorization.state.rawValue), preAuthorization.voucher.expiresAt.sqlValue,
             preAuthorization.releaseAt.sqlValue, now.sqlValue])
        return resource(preAuthorization)
    }

    public func preAuthorization(_ tx: any SQLTransaction, id: String, account: String?) throws -> PreAuthorizationResource {
        guard let (preAuthorization, owner) = try loadPreAuthorization(tx, id, lock: false), account == nil || owner == account else {
            throw APIError.notFound("pre-authorization")
        }
        return resource(preAuthorization)
    }

    /// The customer stops new use of the voucher: payments requested from now on are refused. What is left returns
    /// at the voucher's release (see `expire`), not now: a merchant who accepted offline before the void may upload later.
    public func voidPreAuthorization(_ tx: any SQLTransaction, id: String, device: Device, at now: Timestamp) throws
        -> PreAuthorizationResource
    {
        guard case (var preAuthorization, let owner)? = try loadPreAuthorization(tx, id), owner == device.account else {
            throw APIError.notFound("pre-authorization")
        }
        if preAuthorization.state == .voided { return resource(preAuthorization) }
        do { try preAuthorization.void(at: now) } catch { throw APIError(error) }
        try save(tx, preAuthorization)
        return resource(preAuthorization)
    }

    /// Settles offline payments, each on its own: a result per item, in order, and no item's refusal fails
    /// another. Either party may send them, as often as it likes: a payment settles once (`already_settled` after
    /// that), a payment its merchant was paid for by another payer is `payment_conflict`, and a double spend
    /// (`sequence_reused`, `range_overlap`) is refused with its proof stored and the device key blocked; the device's
    /// other uses, which the merchants accepted in good faith, still settle.
    public func settle(_ tx: any SQLTransaction, _ batch: SettlementBatch, device: Device, at now: Timestamp) throws -> SettlementResults {
        guard (1...Self.maximumSettlementItems).contains(batch.items.count) else {
            throw APIError.invalid("items", "count", "a batch has 1 to \(Self.maximumSettlementItems) items")
        }
        return SettlementResults(results: try batch.items.map { item in try settle(tx, item, device: device, at: now) })
    }

    private func settle(_ tx: any SQLTransaction, _ item: SettlementBatch.Item, device: Device, at now: Timestamp) throws
        -> SettlementResults.Item
    {
        guard let requestBytes = Data(base64Encoded: item.request), let acceptanceBytes = Data(base64Encoded: item.acceptance),
            let request = try? PaymentRequest(encoded: [UInt8](requestBytes)),
            let acceptance = try? PaymentAcceptance(encoded: [UInt8](acceptanceBytes))
        else { return SettlementResults.Item(merchantId: nil, paymentId: nil, result: .malformed) }
        let paymentID = request.paymentID.description
        let isParty = device.account == request.merchantID || device.signingKey == acceptance.customerKey
        guard isParty, let voucherID = acceptance.preAuthorization?.voucher.voucherID,
            var (preAuthorization, _) = try loadPreAuthorization(tx, voucherID.description)
        else { return SettlementResults.Item(merchantId: request.merchantID, paymentId: paymentID, result: .unknownVoucher) }
        guard let merchantKey = try merchantKeys(tx, merchant: request.merchantID).first(where: { key in
            isValidSignature(request.signature, of: request.signingBytes, by: key)
        }) else { return SettlementResults.Item(merchantId: request.merchantID, paymentId: paymentID, result: .badSignature) }
        let payer = Self.payer(voucher: voucherID.description)
        // A payment id is its merchant's: another merchant's payment of the same id is another payment.
        if let recorded = try self.payer(tx, merchant: request.merchantID, payment: request.paymentID).get(), recorded != payer {
            return SettlementResults.Item(merchantId: request.merchantID, paymentId: paymentID, result: .paymentConflict)
        }
        let status = try tx.row("SELECT status FROM payments WHERE id = ? AND merchant = ?", [.text(paymentID), .text(request.merchantID)])
        if try status?.text(0) == LedgerPayment.Status.cancelled.rawValue {
            return SettlementResults.Item(merchantId: request.merchantID, paymentId: paymentID, result: .requestCancelled)
        }
        let merchant = Self.merchantBook(request.merchantID)
        var journal = try Books.load(tx, books: [preAuthorization.escrow], credited: [merchant])
        let result = preAuthorization.settle(
            request, acceptance, merchantKey: merchantKey, merchant: merchant,
            ledgerKeys: keyring.current.trusted, journal: &journal)
        let payment = PreAuthorization.Payment(merchant: request.merchantID, id: request.paymentID)
        if result == .settled, let use = preAuthorization.uses[payment] {
            try Books.save(tx, journal, at: now)
            try tx.run(
                """
                INSERT INTO pre_authorization_uses (pre_authorization, merchant, payment, sequence, total, spent_before, transfer,
                    request, acceptance, settled_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.text(voucherID.description), .text(request.merchantID), .text(paymentID), .integer(Int64(use.sequence)),
                 .integer(Int64(use.total)), .integer(Int64(use.spentBefore)), .text(use.transferID), .blob(request.encoded),
                 .blob(acceptance.encoded), now.sqlValue])
            try recordPayer(tx, payer, merchant: request.merchantID, payment: request.paymentID)
        }
        if result.isDoubleSpend, let doubleSpend = preAuthorization.doubleSpend(of: acceptance) {
            try recordDoubleSpend(tx, doubleSpend, request: request, acceptance: acceptance, preAuthorization: preAuthorization, at: now)
        }
        // Read back as `GET /v1/payments/{id}` reads it, so that both answer the same receipt.
        let receipt = result == .settled || result == .alreadySettled
            ? try settledOffline(tx, request.paymentID, merchant: request.merchantID).first
                .map { Data($0.receipt.encoded).base64EncodedString() }
            : nil
        return SettlementResults.Item(merchantId: request.merchantID, paymentId: paymentID, result: result, receipt: receipt)
    }

    func loadPreAuthorization(_ tx: any SQLTransaction, _ id: String, lock: Bool = true) throws -> (PreAuthorization, String)? {
        guard let row = try tx.row(
            "SELECT voucher, state, account, instrument, release_at, voided_at, released_at FROM pre_authorizations WHERE id = ?"
                + (lock ? tx.dialect.forUpdate : ""),
            [.text(id)])
        else { return nil }
        var uses: [PreAuthorization.Payment: PreAuthorization.Use] = [:]
        for use in try tx.rows(
            """
            SELECT merchant, payment, sequence, total, spent_before, transfer,
                CASE WHEN spent_before IS NULL THEN acceptance END FROM pre_authorization_uses WHERE pre_authorization = ?
            """, [.text(id)])
        {
            guard let bytes = Hex.decode(try use.text(1), limit: 16), let payment = try? PaymentID(bytes: bytes),
                let spentBefore = try use.values[4] == .null
                    ? (try? PaymentAcceptance(encoded: try use.blob(6)))?.preAuthorization?.spentBeforeMinorUnits
                    : UInt64(try use.integer(4))
            else { throw StorageError(.corrupt, "a use of pre-authorization \(id)") }
            uses[PreAuthorization.Payment(merchant: try use.text(0), id: payment)] = PreAuthorization.Use(
                sequence: UInt32(try use.integer(2)), total: UInt64(try use.integer(3)), spentBefore: spentBefore,
                transferID: try use.text(5))
        }
        guard let voucher = try? PreAuthorizationVoucher(encoded: try row.blob(0)),
            let state = PreAuthorization.State(rawValue: try row.text(1))
        else { throw StorageError(.corrupt, "pre-authorization \(id)") }
        let preAuthorization = PreAuthorization(
            voucher: voucher, customer: Self.instrumentBook(try row.text(3)), releaseAt: try row.timestamp(4), state: state,
            voidedAt: try row.optionalTimestamp(5), releasedAt: try row.optionalTimestamp(6), uses: uses)
        return (preAuthorization, try row.text(2))
    }

    /// What voiding and the release change.
    func save(_ tx: any SQLTransaction, _ preAuthorization: PreAuthorization) throws {
        try tx.run("UPDATE pre_authorizations SET state = ?, voided_at = ?, released_at = ? WHERE id = ?",
            [.text(preAuthorization.state.rawValue), preAuthorization.voidedAt.sqlValue, preAuthorization.releasedAt.sqlValue,
             .text(preAuthorization.voucher.voucherID.description)])
    }

    func resource(_ preAuthorization: PreAuthorization) -> PreAuthorizationResource {
        let voucher = preAuthorization.voucher
        return PreAuthorizationResource(
            id: voucher.voucherID.description, instrumentId: voucher.instrumentID, state: preAuthorization.state,
            limit: Int64(voucher.limit.minorUnits), spent: Int64(preAuthorization.spent), currency: voucher.limit.currency.code,
            expiresAt: voucher.expiresAt.millisecondsSince1970, voucher: Data(voucher.encoded).base64EncodedString())
    }
}
