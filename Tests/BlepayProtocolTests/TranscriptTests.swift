import BlepayProtocol
import Foundation
import Testing

/// The committed transcript of a complete online payment with fixed keys (`Vectors/transcript.json`): the code
/// must reproduce it byte for byte, and a customer given only the business's records must answer with the
/// committed customer records. Set `BLEPAY_WRITE_VECTORS=1` to rewrite it after a deliberate wire change.
@Suite struct TranscriptTests {
    struct AirUse: Codable, Equatable {
        let mtu: Int
        let writes: Int
        let notifications: Int
        let bytes: Int
    }

    struct Transcript: Codable, Equatable {
        let description: String
        let keys: [String: String]
        let nowMilliseconds: UInt64
        let info: String
        let sessionHash: String
        let steps: [OnlinePayment.Step]
        let air: [AirUse]
    }

    static func current() throws -> Transcript {
        let payment = try OnlinePayment.run()
        return Transcript(
            description: "Noise_XX handshake and an online payment (request 25.50 EUR, tip 2.50, settled) between "
                + "fixed keys; records hex-encoded with their type byte; air use per MTU: writes (business to "
                + "customer) and notifications (customer to business) count fragments, bytes the ATT PDUs carrying "
                + "them (each fragment plus its 3-byte ATT opcode and handle; no write responses, L2CAP or link layer)",
            keys: [
                "ledger-ed25519-seed": Parties.ledgerKey.seed.hex,
                "merchant-ed25519-seed": Parties.merchantKey.seed.hex,
                "business-x25519-static": Array(Parties.businessStatic.rawRepresentation).hex,
                "business-x25519-ephemeral": Array(Parties.businessEphemeral.rawRepresentation).hex,
                "customer-x25519-static": Array(Parties.customerStatic.rawRepresentation).hex,
                "customer-x25519-ephemeral": Array(Parties.customerEphemeral.rawRepresentation).hex,
                "customer-device-ed25519-seed": Parties.deviceKey.seed.hex,
            ],
            nowMilliseconds: Parties.now.millisecondsSince1970, info: Parties.info.encoded.hex,
            sessionHash: payment.sessionHash.hex, steps: payment.steps,
            air: try [23, 517].map { try airUse(of: payment.steps, mtu: $0) })
    }

    /// Writes (business → customer) and notifications (customer → business), one per fragment, and the bytes of
    /// their ATT PDUs: each fragment and its 3-byte ATT header (opcode, handle). Write responses are not counted.
    static func airUse(of steps: [OnlinePayment.Step], mtu: Int) throws -> AirUse {
        var toCustomer = try Fragmenter(mtu: mtu)
        var toBusiness = try Fragmenter(mtu: mtu)
        var writes = 0, notifications = 0, bytes = 0
        for step in steps {
            let record = [UInt8](hex: step.record)!
            let fragments = step.from == "business"
                ? try toCustomer.fragments(of: record) : try toBusiness.fragments(of: record)
            if step.from == "business" { writes += fragments.count } else { notifications += fragments.count }
            bytes += fragments.reduce(0) { $0 + $1.count + 3 }
        }
        return AirUse(mtu: mtu, writes: writes, notifications: notifications, bytes: bytes)
    }

    @Test func theCodeReproducesTheCommittedTranscript() throws {
        let transcript = try Self.current()
        let url = Vectors.directory.appendingPathComponent("transcript.json")
        if ProcessInfo.processInfo.environment["BLEPAY_WRITE_VECTORS"] == "1" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(transcript).write(to: url)
        }
        let committed = try Vectors.load("transcript.json", as: Transcript.self)
        #expect(committed.steps.count == 6)
        for (index, (live, expected)) in zip(transcript.steps, committed.steps).enumerated() {
            #expect(live == expected, "step \(index)")
        }
        #expect(transcript == committed)
        let att517 = try #require(committed.air.first { $0.mtu == 517 })
        #expect(att517.writes + att517.notifications <= 8)
    }

    /// The air use of the other two executors (`docs/protocol.md` §6.4a), which `make bench` reports too. Both
    /// offline, a payment takes the online one's 6 ATT packets at MTU 517 (the voucher makes the acceptance longer,
    /// the pending receipt carries the merchant's signature instead of the ledger's); when an online customer executes
    /// for an offline business, the go-ahead takes the result's write and the result is one more notification.
    @Test func theOtherExecutorsFitInTheSamePacketsAndOneMore() throws {
        let online = try Self.airUse(of: OnlinePayment.run().steps, mtu: 517)
        let voucher = try Self.airUse(of: OnlinePayment.run(.voucher).steps, mtu: 517)
        let customer = try Self.airUse(of: OnlinePayment.run(.customer).steps, mtu: 517)
        #expect(voucher.writes + voucher.notifications == online.writes + online.notifications)
        #expect(customer.writes == online.writes && customer.notifications == online.notifications + 1)
    }

    @Test func aCustomerAnswersTheCommittedBusinessRecords() throws {
        let committed = try Vectors.load("transcript.json", as: Transcript.self)
        let records = try committed.steps.map { try Record(encoded: [UInt8](hex: $0.record)!) }
        var handshake = Parties.customer()
        guard case .reply(let second) = try handshake.receive(records[0], at: Parties.now) else {
            Issue.record("no reply to handshake 1")
            return
        }
        #expect(second == records[1])
        guard case .established(var session) = try handshake.receive(records[2], at: Parties.now) else {
            Issue.record("handshake 3 did not establish the session")
            return
        }
        #expect(session.sessionHash.bytes.hex == committed.sessionHash)
        guard case .paymentRequest(let request) = try session.open(records[3]) else {
            Issue.record("record 3 is not a request")
            return
        }
        try session.verify(request)
        let acceptance = try session.accept(
            request, tipMinorUnits: 250, instrumentID: "card-1", delegatedInstrument: false,
            at: Parties.now.adding(milliseconds: 5_000), preAuthorization: nil, deviceKey: Parties.deviceKey)
        #expect(try session.seal(.paymentAcceptance(acceptance)) == records[4])
        guard case .paymentResult(let result) = try session.open(records[5]),
            case .finished(let receipt) = result.outcome
        else {
            Issue.record("record 5 is not a finished result")
            return
        }
        #expect(receipt.status == .settled && receipt.tipMinorUnits == 250)
        #expect(isValidSignature(receipt.ledgerSignature!, of: receipt.signingBytes, by: Parties.ledgerKey.publicKey))
    }
}
