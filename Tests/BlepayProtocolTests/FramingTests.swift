import BlepayProtocol
import Foundation
import Testing

@Suite struct FramingTests {
    static let t0 = ContinuousClock.now
    static let record = Record(kind: .transport, body: Message.paymentAcceptance(Sample.offlineAcceptance).encoded).encoded

    @Test(arguments: [23, 247, 517])
    func fragmentsFitTheMTUAndReassemble(_ mtu: Int) throws {
        var fragmenter = try Fragmenter(mtu: mtu)
        let fragments = try fragmenter.fragments(of: Self.record)
        let payload = min(mtu - 3, Framing.maximumFragmentSize) - 2
        #expect(fragments.allSatisfy { $0.count <= min(mtu - 3, Framing.maximumFragmentSize) })
        #expect(fragments.count == (Self.record.count + payload - 1) / payload)
        #expect(fragments.enumerated().allSatisfy { Int($1[1]) == $0 })
        #expect(fragments.map { $0[0] & 0x80 != 0 } == Array(repeating: false, count: fragments.count - 1) + [true])
        var reassembler = Reassembler()
        var records: [[UInt8]] = []
        for fragment in fragments {
            if let record = try reassembler.receive(fragment, at: Self.t0) { records.append(record) }
        }
        #expect(records == [Self.record])
        #expect(reassembler.pendingBytes == 0)
    }

    /// A record over 512 bytes: what a certificate with a merchant name of 64 four-byte characters makes of
    /// handshake 3. At MTU 517 no fragment may pass 510 bytes, the most BlueZ takes in one write.
    static let largeRecord = Record(kind: .transport, body: (0..<600).map { UInt8($0 & 0xFF) }).encoded

    @Test func noFragmentPassesWhatBlueZTakesInOneWrite() throws {
        var fragmenter = try Fragmenter(mtu: 517)
        let fragments = try fragmenter.fragments(of: Self.largeRecord)
        #expect(fragments.map(\.count) == [510, Self.largeRecord.count - 508 + 2])
        var reassembler = Reassembler()
        #expect(try reassembler.receive(fragments[0], at: Self.t0) == nil)
        #expect(try reassembler.receive(fragments[1], at: Self.t0) == Self.largeRecord)
    }

    /// `Vectors/fragments.json`: the fragments of one record at MTU 23 and 247, and of a record over 512 bytes at
    /// MTU 517 (`large_record`, `large_fragments`); its description says the bodies are not ciphertext.
    @Test func fragmentsMatchTheCommittedVectors() throws {
        struct Vector: Decodable {
            let description: String
            let record: String
            let fragments: [String: [String]]
            let large_record: String
            let large_fragments: [String: [String]]
            let channel_fragments: [String: [String]]
        }
        let vector = try Vectors.load("fragments.json", as: Vector.self)
        #expect(vector.record == Self.record.hex)
        #expect(vector.fragments.keys.sorted() == ["23", "247"])
        #expect(vector.large_record == Self.largeRecord.hex)
        #expect(vector.large_fragments.keys.sorted() == ["517"])
        for (record, fragments) in [(Self.record, vector.fragments), (Self.largeRecord, vector.large_fragments)] {
            for (mtu, expected) in fragments {
                var fragmenter = try Fragmenter(mtu: try #require(Int(mtu)))
                #expect(try fragmenter.fragments(of: record).map(\.hex) == expected)
            }
        }
        #expect(vector.channel_fragments.keys.sorted() == ["256", "4098"])
        for (mtu, expected) in vector.channel_fragments {
            var fragmenter = try Fragmenter(channelMTU: try #require(Int(mtu)))
            #expect(try fragmenter.fragments(of: Self.largeRecord).map(\.hex) == expected)
        }
    }

    /// Over an L2CAP channel (§9) a record is one SDU when the peer takes `Framing.channelMTU`, the largest record
    /// and its header; a peer that takes less gets SDUs of its MTU, reassembled as over ATT.
    @Test(arguments: [Framing.channelMTU, 65535, 672, 23])
    func channelSDUsFitThePeersMTU(_ mtu: Int) throws {
        var fragmenter = try Fragmenter(channelMTU: mtu)
        let largest = Array(repeating: UInt8(4), count: Framing.maximumRecordSize)
        let sdus = try fragmenter.fragments(of: largest)
        #expect(sdus.allSatisfy { $0.count <= mtu })
        #expect(sdus.count == (mtu >= Framing.channelMTU ? 1 : (largest.count + mtu - 3) / (mtu - 2)))
        var reassembler = Reassembler()
        var records: [[UInt8]] = []
        for sdu in sdus {
            if let record = try reassembler.receive(sdu, at: Self.t0) { records.append(record) }
        }
        #expect(records == [largest])
        #expect(protocolError { _ = try Fragmenter(channelMTU: 22) } == .invalidMTU)
        #expect(fragmenter.overChannel)
    }

    @Test func recordsAreNumberedAndADuplicateFragmentIsIgnored() throws {
        var fragmenter = try Fragmenter(mtu: 23)
        var reassembler = Reassembler()
        for n in 0..<130 {  // the counter wraps at 128
            let record = Array(repeating: UInt8(n & 0xFF), count: 30)
            let fragments = try fragmenter.fragments(of: record)
            #expect(fragments[0][0] & 0x7F == UInt8(n % 128))
            #expect(try reassembler.receive(fragments[0], at: Self.t0) == nil)
            #expect(try reassembler.receive(fragments[0], at: Self.t0) == nil)  // a retried write
            #expect(try reassembler.receive(fragments[1], at: Self.t0) == record)
        }
    }

    @Test func aLostOrReorderedFragmentDropsTheRecord() throws {
        var fragmenter = try Fragmenter(mtu: 23)
        let fragments = try fragmenter.fragments(of: Array(repeating: 7, count: 60))  // 4 fragments
        var lost = Reassembler()
        _ = try lost.receive(fragments[0], at: Self.t0)
        #expect(protocolError { _ = try lost.receive(fragments[2], at: Self.t0) } == .fragmentOutOfOrder)
        #expect(lost.pendingBytes == 0)
        var reordered = Reassembler()
        #expect(protocolError { _ = try reordered.receive(fragments[1], at: Self.t0) } == .fragmentOutOfOrder)
        var wrongRecord = Reassembler()
        let next = try fragmenter.fragments(of: [1])
        #expect(protocolError { _ = try wrongRecord.receive(next[0], at: Self.t0) } == .fragmentOutOfOrder)
    }

    @Test func anIncompleteRecordTimesOut() throws {
        var fragmenter = try Fragmenter(mtu: 23)
        let fragments = try fragmenter.fragments(of: Array(repeating: 7, count: 40))
        var reassembler = Reassembler()
        _ = try reassembler.receive(fragments[0], at: Self.t0)
        #expect(!reassembler.hasTimedOut(at: Self.t0 + .seconds(5)))
        #expect(reassembler.hasTimedOut(at: Self.t0 + .milliseconds(5001)))
        #expect(protocolError { _ = try reassembler.receive(fragments[1], at: Self.t0 + .seconds(6)) } == .reassemblyTimeout)
        #expect(reassembler.pendingBytes == 0)
    }

    @Test func oversizeRecordsAreRefusedWithoutBuffering() throws {
        var fragmenter = try Fragmenter(mtu: 517)
        #expect(protocolError { _ = try fragmenter.fragments(of: Array(repeating: 0, count: 4097)) } == .messageTooLarge)
        #expect(protocolError { _ = try fragmenter.fragments(of: []) } == .messageTooLarge)
        // A peer that never sets the last flag: refused once the record would pass 4096 bytes.
        var reassembler = Reassembler()
        var code: ProtocolError.Code?
        for index in 0..<9 where code == nil {
            code = protocolError { _ = try reassembler.receive([0, UInt8(index)] + Array(repeating: 0, count: 512), at: Self.t0) }
        }
        #expect(code == .messageTooLarge)
        #expect(reassembler.pendingBytes == 0)
        #expect(protocolError { _ = try Fragmenter(mtu: 22) } == .invalidMTU)
        #expect(protocolError { _ = try reassembler.receive([0x80, 0], at: Self.t0) } == .truncated)
    }

    @Test func recordsCarryTheirKind() throws {
        for kind in Record.Kind.allCases {
            let record = Record(kind: kind, body: [1, 2, 3])
            #expect(try Record(encoded: record.encoded) == record)
        }
        #expect(protocolError { _ = try Record(encoded: [9, 1]) } == .unknownMessageType)
        #expect(protocolError { _ = try Record(encoded: []) } == .truncated)
    }
}
