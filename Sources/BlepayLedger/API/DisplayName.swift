import Foundation

/// What makes a name shown to payers look like another, checked when the ledger gives a merchant its name: forms that
/// only look like plain letters (fullwidth, mathematical, circled or superscript letters, ligatures: a name must be
/// what NFKC normalization makes of it), and letters of scripts whose shapes coincide mixed in one name ("Stаrbucks"
/// with a Cyrillic а). Invisible characters are `Text.validateName`'s.
public enum DisplayName {
    /// The scripts whose letters pass for one another (Unicode's confusables are mostly among these).
    enum Script: String, CaseIterable {
        case latin = "Latin", greek = "Greek", cyrillic = "Cyrillic", armenian = "Armenian", cherokee = "Cherokee"

        var ranges: [ClosedRange<UInt32>] {
            switch self {
            case .latin: [0x41...0x5A, 0x61...0x7A, 0xC0...0x24F, 0x1E00...0x1EFF, 0x2C60...0x2C7F, 0xA720...0xA7FF]
            case .greek: [0x370...0x3FF, 0x1F00...0x1FFF]
            case .cyrillic: [0x400...0x52F, 0x1C80...0x1C8F, 0x2DE0...0x2DFF, 0xA640...0xA69F]
            case .armenian: [0x531...0x58F]
            case .cherokee: [0x13A0...0x13FF, 0xAB70...0xABBF]
            }
        }

        init?(_ scalar: Unicode.Scalar) {
            guard scalar.properties.isAlphabetic,
                let script = Self.allCases.first(where: { $0.ranges.contains { $0.contains(scalar.value) } })
            else { return nil }
            self = script
        }
    }

    /// Why `name` could pass for another name, or nil.
    public static func confusion(in name: String) -> String? {
        if name.precomposedStringWithCompatibilityMapping != name {
            return "contains characters that only look like plain ones (it is not in NFKC form)"
        }
        let scripts = Set(name.unicodeScalars.compactMap(Script.init))
        if scripts.count > 1 {
            return "mixes letters of scripts that look alike (\(scripts.map(\.rawValue).sorted().joined(separator: ", ")))"
        }
        return nil
    }
}
