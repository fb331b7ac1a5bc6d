import BlepayDaemonStore
import BlepayLedger
import BlepayLedgerClient
import BlepayProtocol
import Logging

/// How the customer learns of refunds of its payments: at each contact with the ledger, the refunds after the
/// cursor kept in the history; each receipt checked against the trusted ledger keys, those of this device's payments
/// kept in the history and signalled (`refunded`), and only then the cursor moved on, so that a crash neither loses
/// one nor signals one twice. A receipt no trusted key signed (a ledger key this configuration does not trust yet)
/// holds the cursor where it is: that page is read again at each contact, until it verifies.
public struct RefundWatch: Sendable {
    let ledger: LedgerClient
    let trusted: TrustedLedgerKeys
    let deviceKey: Key32
    let history: PaymentHistory
    let logger: Logger
    private let found = AsyncStream<RefundReceipt>.makeStream()
    /// Each refund learnt, once kept; the control API signals them.
    public var events: AsyncStream<RefundReceipt> { found.stream }
    static let pageSize = 100

    public init(ledger: LedgerClient, trusted: TrustedLedgerKeys, deviceKey: Key32, history: PaymentHistory, logger: Logger) {
        self.ledger = ledger
        self.trusted = trusted
        self.deviceKey = deviceKey
        self.history = history
        self.logger = logger
    }

    /// Takes every refund the ledger lists after the kept cursor; returns how many were new to this device. An
    /// unreachable ledger or a state file that fails ends the round: the next one starts where this one stopped.
    @discardableResult
    public func poll() async -> Int {
        var new = 0
        var cursor: String?
        do {
            cursor = try history.refundCursor()
        } catch {
            logger.error("the refund cursor cannot be read", metadata: ["error": "\(error)"])
            return new
        }
        while true {
            let page: RefundPage
            do throws(LedgerClientError) {
                page = try await ledger.refunds(after: cursor, limit: Self.pageSize)
            } catch {
                logger.debug("refunds not read", metadata: ["error": "\(error)"])
                return new
            }
            var complete = true
            for resource in page.data {
                let receipt: RefundReceipt
                switch take(resource) {
                case .mine(let mine): receipt = mine
                case .anotherDevices: continue
                case .unverified:
                    complete = false
                    continue
                }
                do {
                    guard try history.recordRefund(HistoryRefund(receipt)) else { continue }
                } catch {
                    logger.error("a refund could not be kept; it is read again", metadata: ["error": "\(error)"])
                    return new
                }
                new += 1
                logger.info("payment refunded", metadata: [
                    "payment": "\(receipt.paymentID)", "refund": "\(receipt.refundID)", "amount": "\(receipt.amount)",
                ])
                found.continuation.yield(receipt)
            }
            guard complete else { return new }
            do {
                try history.keepRefundCursor(page.cursor)
            } catch {
                logger.error("the refund cursor could not be kept", metadata: ["error": "\(error)"])
                return new
            }
            if page.data.count < Self.pageSize || page.cursor == cursor { return new }
            cursor = page.cursor
        }
    }

    /// What a refund listed is to this device: of a payment it made, of one another device of the account made (which
    /// keeps its own), or not signed by a trusted ledger key.
    private enum Taken {
        case mine(RefundReceipt)
        case anotherDevices
        case unverified
    }

    private func take(_ resource: RefundResource) -> Taken {
        do throws(ProtocolError) {
            let receipt = try resource.verifiedReceipt(trusting: trusted)
            return receipt.payerKey == deviceKey ? .mine(receipt) : .anotherDevices
        } catch {
            logger.warning("a refund receipt from the ledger was refused", metadata: [
                "refund": "\(resource.id)", "error": "\(error)",
            ])
            return .unverified
        }
    }
}
