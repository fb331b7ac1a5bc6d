import BlepayProtocol
import Foundation

// The Foundation JSONEncoder/JSONDecoder baselines. Decoding goes back through the validating initialisers, as
// blepay's codec does.
//
// `Synthesized*` mirror the model's structures field for field, so they encode as `Codable` synthesis on the model
// itself would: nested money, currency and timestamps, byte strings as arrays of numbers. `Compact*` are what a
// careful JSON API would send instead: flat, with byte strings as base64.

struct CompactRequest: Codable {
    let paymentID: Data
    let amountMinorUnits: UInt64
    let currency: String
    let exponent: UInt8
    let reference: String?
    let merchantID: String
    let merchantName: String
    let createdAt: UInt64
    let expiresAt: UInt64
    let businessOnline: Bool
    let signature: Data

    init(_ r: PaymentRequest) {
        paymentID = Data(r.paymentID.bytes)
        amountMinorUnits = r.amount.minorUnits
        currency = r.amount.currency.code
        exponent = r.amount.currency.exponent
        reference = r.reference
        merchantID = r.merchantID
        merchantName = r.merchantName
        createdAt = r.createdAt.millisecondsSince1970
        expiresAt = r.expiresAt.millisecondsSince1970
        businessOnline = r.businessOnline
        signature = Data(r.signature.bytes)
    }

    var model: PaymentRequest {
        get throws {
            try PaymentRequest(
                paymentID: PaymentID(bytes: Array(paymentID)),
                amount: Money(minorUnits: amountMinorUnits, currency: Currency(code: currency, exponent: exponent)),
                reference: reference, merchantID: merchantID, merchantName: merchantName,
                createdAt: Timestamp(millisecondsSince1970: createdAt),
                expiresAt: Timestamp(millisecondsSince1970: expiresAt), businessOnline: businessOnline,
                signature: Signature64(Array(signature)))
        }
    }
}

struct CompactAcceptance: Codable {
    let paymentID: Data
    let amountMinorUnits: UInt64
    let currency: String
    let exponent: UInt8
    let tipMinorUnits: UInt64
    let instrumentID: String
    let delegatedInstrument: Bool
    let createdAt: UInt64
    let requestHash: Data
    let sessionHash: Data
    let customerKey: Data
    let signature: Data

    init(_ a: PaymentAcceptance) {
        paymentID = Data(a.paymentID.bytes)
        amountMinorUnits = a.amount.minorUnits
        currency = a.amount.currency.code
        exponent = a.amount.currency.exponent
        tipMinorUnits = a.tipMinorUnits
        instrumentID = a.instrumentID
        delegatedInstrument = a.delegatedInstrument
        createdAt = a.createdAt.millisecondsSince1970
        requestHash = Data(a.requestHash.bytes)
        sessionHash = Data(a.sessionHash.bytes)
        customerKey = Data(a.customerKey.bytes)
        signature = Data(a.signature.bytes)
    }

    var model: PaymentAcceptance {
        get throws {
            try PaymentAcceptance(
                paymentID: PaymentID(bytes: Array(paymentID)),
                amount: Money(minorUnits: amountMinorUnits, currency: Currency(code: currency, exponent: exponent)),
                tipMinorUnits: tipMinorUnits, instrumentID: instrumentID, delegatedInstrument: delegatedInstrument,
                createdAt: Timestamp(millisecondsSince1970: createdAt), requestHash: Hash32(Array(requestHash)),
                sessionHash: Hash32(Array(sessionHash)), customerKey: Key32(Array(customerKey)),
                preAuthorization: nil, signature: Signature64(Array(signature)))
        }
    }
}

struct SynthesizedCurrency: Codable {
    let code: String
    let exponent: UInt8
}

struct SynthesizedMoney: Codable {
    let minorUnits: UInt64
    let currency: SynthesizedCurrency

    init(_ m: Money) {
        minorUnits = m.minorUnits
        currency = SynthesizedCurrency(code: m.currency.code, exponent: m.currency.exponent)
    }

    var model: Money {
        get throws {
            try Money(minorUnits: minorUnits, currency: Currency(code: currency.code, exponent: currency.exponent))
        }
    }
}

struct SynthesizedBytes: Codable {
    let bytes: [UInt8]
}

struct SynthesizedTimestamp: Codable {
    let millisecondsSince1970: UInt64
}

struct SynthesizedRequest: Codable {
    let paymentID: SynthesizedBytes
    let amount: SynthesizedMoney
    let reference: String?
    let merchantID: String
    let merchantName: String
    let createdAt: SynthesizedTimestamp
    let expiresAt: SynthesizedTimestamp
    let businessOnline: Bool
    let signature: SynthesizedBytes

    init(_ r: PaymentRequest) {
        paymentID = SynthesizedBytes(bytes: r.paymentID.bytes)
        amount = SynthesizedMoney(r.amount)
        reference = r.reference
        merchantID = r.merchantID
        merchantName = r.merchantName
        createdAt = SynthesizedTimestamp(millisecondsSince1970: r.createdAt.millisecondsSince1970)
        expiresAt = SynthesizedTimestamp(millisecondsSince1970: r.expiresAt.millisecondsSince1970)
        businessOnline = r.businessOnline
        signature = SynthesizedBytes(bytes: r.signature.bytes)
    }

    var model: PaymentRequest {
        get throws {
            try PaymentRequest(
                paymentID: PaymentID(bytes: paymentID.bytes), amount: amount.model, reference: reference,
                merchantID: merchantID, merchantName: merchantName,
                createdAt: Timestamp(millisecondsSince1970: createdAt.millisecondsSince1970),
                expiresAt: Timestamp(millisecondsSince1970: expiresAt.millisecondsSince1970),
                businessOnline: businessOnline, signature: Signature64(signature.bytes))
        }
    }
}

struct SynthesizedAcceptance: Codable {
    let paymentID: SynthesizedBytes
    let amount: SynthesizedMoney
    let tipMinorUnits: UInt64
    let instrumentID: String
    let delegatedInstrument: Bool
    let createdAt: SynthesizedTimestamp
    let requestHash: SynthesizedBytes
    let sessionHash: SynthesizedBytes
    let customerKey: SynthesizedBytes
    let signature: SynthesizedBytes

    init(_ a: PaymentAcceptance) {
        paymentID = SynthesizedBytes(bytes: a.paymentID.bytes)
        amount = SynthesizedMoney(a.amount)
        tipMinorUnits = a.tipMinorUnits
        instrumentID = a.instrumentID
        delegatedInstrument = a.delegatedInstrument
        createdAt = SynthesizedTimestamp(millisecondsSince1970: a.createdAt.millisecondsSince1970)
        requestHash = SynthesizedBytes(bytes: a.requestHash.bytes)
        sessionHash = SynthesizedBytes(bytes: a.sessionHash.bytes)
        customerKey = SynthesizedBytes(bytes: a.customerKey.bytes)
        signature = SynthesizedBytes(bytes: a.signature.bytes)
    }

    var model: PaymentAcceptance {
        get throws {
            try PaymentAcceptance(
                paymentID: PaymentID(bytes: paymentID.bytes), amount: amount.model, tipMinorUnits: tipMinorUnits,
                instrumentID: instrumentID, delegatedInstrument: delegatedInstrument,
                createdAt: Timestamp(millisecondsSince1970: createdAt.millisecondsSince1970),
                requestHash: Hash32(requestHash.bytes), sessionHash: Hash32(sessionHash.bytes),
                customerKey: Key32(customerKey.bytes), preAuthorization: nil, signature: Signature64(signature.bytes))
        }
    }
}
