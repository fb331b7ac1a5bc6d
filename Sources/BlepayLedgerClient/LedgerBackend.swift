import BlepayLedger
import BlepayPayments
import BlepayProtocol
import Foundation

/// The payment sessions' ledger (`PaymentLedger`) over the HTTP API: what the daemons execute payments with.
public struct LedgerBackend: PaymentLedger {
    public let client: LedgerClient

    public init(client: LedgerClient) { self.client = client }

    public func execute(_ request: PaymentRequest, _ acceptance: PaymentAcceptance) async -> LedgerOutcome {
        do {
            return try outcome(try await client.accept(acceptance, request: request))
        } catch {
            return outcome(error)
        }
    }

    public func status(of paymentID: PaymentID, merchant: String?) async -> LedgerOutcome {
        do {
            return try outcome(try await client.payment(paymentID, merchant: merchant))
        } catch {
            return outcome(error)
        }
    }

    public func cancel(_ paymentID: PaymentID) async {
        _ = try? await client.cancelPayment(paymentID)
    }

    private func outcome(_ payment: PaymentResource) throws(LedgerClientError) -> LedgerOutcome {
        switch payment.status {
        case .settled, .executed:
            guard let text = payment.receipt, let bytes = Data(base64Encoded: text),
                let receipt = try? Receipt(encoded: [UInt8](bytes))
            else {
                if payment.status == .executed { return .unknown("executed; the receipt follows at settlement") }
                throw .invalidResponse("a settled payment without a valid receipt")
            }
            return .executed(receipt)
        case .failed:
            let code = payment.failureReason.flatMap { name in PaymentErrorCode.allCases.first { $0.name == name } }
            return .notExecuted(PaymentError(code ?? .rejected))
        case .cancelled:
            return .notExecuted(PaymentError(.userCancelled))
        case .authorizationRequired, .authorizing, .authorized:
            return .unknown("the ledger has not finished the payment (\(payment.status.rawValue))")
        }
    }

    private func outcome(_ error: LedgerClientError) -> LedgerOutcome {
        switch error {
        case .refused: .notExecuted(error.paymentError)
        case .unavailable, .cancelled, .invalidResponse, .tlsFailed, .insecureTransport: .unknown(error.description)
        }
    }
}
