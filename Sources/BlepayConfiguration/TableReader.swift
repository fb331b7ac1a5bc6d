import FoundationEssentials
import TOMLKit

/// Reads known keys out of a TOML table and refuses the rest.
public struct TableReader {
    public let table: TOMLTable
    public let file: String
    public var prefix = ""
    private var known: Set<String> = []

    public init(table: TOMLTable, file: String, prefix: String = "") {
        self.table = table
        self.file = file
        self.prefix = prefix
    }

    /// Reads and parses `file`; a file that is missing or unreadable is an error, not the defaults.
    public static func load(file: String) throws(ConfigurationError) -> TableReader {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigurationError(file: file, key: nil, reason: "cannot be read")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: file)
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> TableReader {
        do {
            return TableReader(table: try TOMLTable(string: text), file: file)
        } catch {
            let line = (error as? TOMLParseError).map { " at line \($0.source.begin.line)" } ?? ""
            throw ConfigurationError(file: file, key: nil, reason: "is not valid TOML\(line)")
        }
    }

    public func error(_ key: String, _ reason: String) -> ConfigurationError {
        ConfigurationError(file: file, key: prefix + key, reason: reason)
    }

    public mutating func section(_ name: String, _ body: (inout TableReader) throws(ConfigurationError) -> Void)
        throws(ConfigurationError)
    {
        known.insert(name)
        guard let value = table[name] else { return }
        guard let section = value.table else { throw error(name, "is a table ([\(name)])") }
        var reader = TableReader(table: section, file: file, prefix: prefix + name + ".")
        try body(&reader)
        try reader.finish()
    }

    public mutating func string(_ key: String, into value: inout String) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let string = raw.string, !string.isEmpty else { throw error(key, "is a non-empty string") }
        value = string
    }

    /// An array of non-empty strings.
    public mutating func strings(_ key: String, into value: inout [String]) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let array = raw.array else { throw error(key, "is an array of non-empty strings") }
        var strings: [String] = []
        for element in array {
            guard let string = element.string, !string.isEmpty else { throw error(key, "is an array of non-empty strings") }
            strings.append(string)
        }
        value = strings
    }

    public mutating func integer(_ key: String, into value: inout Int, in range: ClosedRange<Int>) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let integer = raw.int, range.contains(integer) else {
            throw error(key, "is an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        value = integer
    }

    public mutating func boolean(_ key: String, into value: inout Bool) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let boolean = raw.bool else { throw error(key, "is true or false") }
        value = boolean
    }

    /// One of `choices`.
    public mutating func choice(_ key: String, into value: inout String, from choices: [String]) throws(ConfigurationError) {
        known.insert(key)
        guard let raw = table[key] else { return }
        guard let string = raw.string, choices.contains(string) else {
            throw error(key, "is one of " + choices.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        value = string
    }

    /// `[logging]`, the same in every blepay service's file: `level`, the least severe level logged.
    public mutating func logging(into level: inout String) throws(ConfigurationError) {
        try section("logging") { section throws(ConfigurationError) in
            try section.choice("level", into: &level, from: Self.logLevels)
        }
    }

    /// swift-log's levels, least severe first.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Every key of the file, `section.key`, with its value as text: what a reload compares.
    public var flattened: [String: String] {
        var keys: [String: String] = [:]
        func add(_ table: TOMLTable, _ prefix: String) {
            for key in table.keys {
                guard let value = table[key] else { continue }
                if let nested = value.table { add(nested, prefix + key + ".") } else { keys[prefix + key] = "\(value.tomlValue)" }
            }
        }
        add(table, prefix)
        return keys
    }

    public func finish() throws(ConfigurationError) {
        if let unknown = table.keys.sorted().first(where: { !known.contains($0) }) {
            throw error(unknown, "is not a known key")
        }
    }
}
