/// The names the ledger gives a new payment's hold and transfer: `hold:` or `pay:` and a UUID of version 7.
enum TimeOrderedName {
    static func isOne(_ name: String) -> Bool {
        guard let colon = name.firstIndex(of: ":"), ["hold", "pay"].contains(name[..<colon]) else { return false }
        let id = name[name.index(after: colon)...]
        return id.split(separator: "-", omittingEmptySubsequences: false).map(\.count) == [8, 4, 4, 4, 12]
            && id.allSatisfy { $0 == "-" || $0.isHexDigit && !$0.isUppercase } && id.dropFirst(14).first == "7"
    }
}
