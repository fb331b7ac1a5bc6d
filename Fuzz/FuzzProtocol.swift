// libFuzzer entry point over blepay's protocol decoders and reassembler, compiled together with the
// BlepayProtocol sources it exercises by `scripts/fuzz.sh` (not part of the package build).

/// The first byte picks the target; the rest is the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch selector % 4 {
    case 0:
        if let message = try? Message(encoded: input) {
            // Canonical: what decodes re-encodes to itself.
            precondition((try? Message(encoded: message.encoded)) == message, "a decoded message does not round-trip")
        }
    case 1:
        _ = try? Record(encoded: input)
        _ = try? AdvertisementData(encoded: input)
        _ = try? ProtocolInfo(encoded: input)
    case 2:
        _ = try? MerchantCertificate(encoded: input)
        _ = try? HandshakePayload.Credentials(encoded: input)
        _ = try? PreAuthorizationVoucher(encoded: input)
    default:
        // Fragments: each chunk is a 1-byte length and that many bytes, fed to one reassembler.
        var reassembler = Reassembler()
        let now = ContinuousClock.now
        var index = 0
        while index < input.count {
            let length = Int(input[index])
            let chunk = Array(input[(index + 1)..<min(input.count, index + 1 + length)])
            index += 1 + length
            if let record = try? reassembler.receive(chunk, at: now) {
                _ = try? Record(encoded: record)
            }
            precondition(reassembler.pendingBytes <= Framing.maximumRecordSize, "reassembler over its bound")
        }
    }
    return 0
}
