/// Why no voucher could be presented for a payment. Each is the customer's own refusal, before anything is signed.
public struct WalletError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// No voucher in the payment's currency is held (or the state file that held it is gone).
        case noVoucher = "wallet.no-voucher"
        /// Every voucher in the currency is voided, expired, not yet valid, or has less left than the total.
        case insufficient = "wallet.insufficient"
        /// The payment was already signed under a voucher for another total.
        case alreadySigned = "wallet.already-signed"
        /// A voucher the customer asked about is not held.
        case unknownVoucher = "wallet.unknown-voucher"
        /// A voucher from the ledger that is not for this device, or not signed by a trusted ledger key.
        case foreignVoucher = "wallet.foreign-voucher"
        /// The state file failed.
        case storage = "wallet.storage"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
