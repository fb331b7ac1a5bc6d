import BlepayControl
import BlepayDaemonStore
import BlepayLedger
import BlepayPayments
import BlepayProtocol

// The control API's values made from what the daemons hold: requests, receipts and errors, the machines' events and
// snapshots, kept settlements and vouchers, the ledger's day report.

extension ControlDetails {
    init(_ request: PaymentRequest) {
        self.init()
        amount = request.amount.minorUnits
        currency = request.amount.currency.code
        reference = request.reference
        merchantID = request.merchantID
        merchantName = request.merchantName
        expiresAt = request.expiresAt.millisecondsSince1970
    }

    mutating func add(_ receipt: Receipt) {
        amount = receipt.amount.minorUnits
        currency = receipt.amount.currency.code
        tip = receipt.tipMinorUnits
        receiptStatus = receipt.status.name
        transactionID = receipt.transactionID
    }

    mutating func add(_ error: PaymentError) {
        code = error.code.name
        codeNumber = UInt32(error.code.rawValue)
        detail = error.detail
    }

    func merging(_ request: PaymentRequest) -> ControlDetails {
        var merged = ControlDetails(request)
        merged.peer = peer
        return merged
    }
}

extension ControlEvent {
    public init(_ event: CustomerEvent) {
        var details = ControlDetails()
        details.peer = event.peer.rawValue
        switch event {
        case .receivedPayment(_, let request):
            self.init(kind: .receivedPayment, paymentID: request.paymentID.description, details: details.merging(request))
        case .finishedPayment(_, let receipt):
            details.add(receipt)
            self.init(kind: .finishedPayment, paymentID: receipt.paymentID.description, details: details)
        case .cancelled(_, let payment, let side):
            details.by = side == .customer ? "customer" : "business"
            self.init(kind: .cancelled, paymentID: payment.description, details: details)
        case .error(_, let payment, let error):
            details.add(error)
            self.init(kind: .error, paymentID: payment?.description ?? "", details: details)
        case .otherPaid(_, let payment):
            self.init(kind: .otherPaid, paymentID: payment.description, details: details)
        case .disconnected:
            self.init(kind: .disconnected, paymentID: "", details: details)
        case .outcomeFound(_, let payment, let outcome):
            switch outcome {
            case .success(let receipt): details.add(receipt)
            case .failure(let error): details.add(error)
            }
            self.init(kind: .outcomeFound, paymentID: payment.description, details: details)
        }
    }

    public init(_ event: BusinessEvent) {
        var details = ControlDetails()
        let (kind, id): (Kind, PaymentID)
        switch event {
        case .offered(let payment, let peer): (kind, id, details.peer) = (.offered, payment, peer.rawValue)
        case .declined(let payment, let peer): (kind, id, details.peer) = (.declined, payment, peer.rawValue)
        case .customerRefused(let payment, let peer, let error):
            (kind, id, details.peer) = (.customerRefused, payment, peer.rawValue)
            details.add(error)
        case .accepted(let payment, let peer, let total):
            (kind, id, details.peer) = (.accepted, payment, peer.rawValue)
            (details.total, details.currency) = (total.minorUnits, total.currency.code)
        case .acceptanceRefused(let payment, let peer, let error):
            (kind, id, details.peer) = (.acceptanceRefused, payment, peer.rawValue)
            details.add(error)
        case .outcomePending(let payment): (kind, id) = (.outcomePending, payment)
        case .finished(let payment, let peer, let receipt):
            (kind, id, details.peer) = (.finished, payment, peer.rawValue)
            details.add(receipt)
        case .failed(let payment, let peer, let error):
            (kind, id, details.peer) = (.failed, payment, peer.rawValue)
            details.add(error)
        case .cancelled(let payment): (kind, id) = (.cancelled, payment)
        case .expired(let payment): (kind, id) = (.expired, payment)
        case .settled(let payment, let receipt):
            (kind, id) = (.settled, payment)
            if let receipt { details.add(receipt) }
        case .settlementRefused(let payment, let error):
            (kind, id) = (.settlementRefused, payment)
            details.add(error)
        }
        self.init(kind: kind, paymentID: id.description, details: details)
    }
}

extension ControlPayment {
    public init(_ snapshot: PaymentSnapshot) {
        var details = ControlDetails(snapshot.request)
        if let receipt = snapshot.receipt { details.add(receipt) }
        if case .failed(let code) = snapshot.status { details.add(PaymentError(code)) }
        details.peer = snapshot.peer?.rawValue
        self.init(paymentID: snapshot.request.paymentID.description, status: snapshot.status.name, details: details)
    }
}

extension ControlSettlement {
    public init(_ entry: SettlementQueue.Entry) {
        let (request, acceptance) = (entry.request, entry.acceptance)
        var details = ControlDetails()
        details.merchantID = request.merchantID
        details.reference = request.reference
        details.amount = acceptance.amount.minorUnits
        details.tip = acceptance.tipMinorUnits
        details.currency = acceptance.amount.currency.code
        details.voucherID = acceptance.preAuthorization?.voucher.voucherID.description
        details.queuedAt = entry.queuedAt.millisecondsSince1970
        let state: String
        switch entry.state {
        case .waiting: state = "waiting"
        case .sending: state = "sending"
        case .ended(let outcome, let at):
            details.endedAt = at.millisecondsSince1970
            switch outcome {
            case .settled: state = "settled"
            case .refused(let code): (state, details.code) = ("refused", code)
            }
        }
        self.init(paymentID: request.paymentID.description, state: state, details: details)
    }
}

extension ControlVoucher {
    public init(_ stored: StoredVoucher, at now: Timestamp) {
        let voucher = stored.voucher
        let status = if stored.voidedAt != nil { "voided" }
            else if now >= voucher.expiresAt { "expired" }
            else if stored.remainingMinorUnits == 0 { "used-up" }
            else { "usable" }
        var details = ControlDetails()
        details.amount = voucher.limit.minorUnits
        details.currency = voucher.limit.currency.code
        details.instrumentID = voucher.instrumentID
        details.spent = stored.spentMinorUnits
        details.uses = stored.uses
        details.issuedAt = voucher.issuedAt.millisecondsSince1970
        details.expiresAt = voucher.expiresAt.millisecondsSince1970
        details.voidedAt = stored.voidedAt?.millisecondsSince1970
        self.init(voucherID: voucher.voucherID.description, status: status, details: details)
    }
}

extension ControlReport {
    public init(_ report: DailyReport) {
        self.init(
            merchantID: report.merchantId, date: report.date, timeZone: report.timeZone,
            currencies: report.currencies.map {
                Totals(
                    currency: $0.currency, count: UInt32(clamping: $0.count), gross: UInt64(clamping: $0.gross),
                    tips: UInt64(clamping: $0.tips), refundCount: UInt32(clamping: $0.refundCount),
                    refunds: UInt64(clamping: $0.refunds), net: $0.net)
            })
    }
}
