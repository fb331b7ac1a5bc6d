/// A configuration file that cannot be used, said in one line: the file, the key and why.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public static let code = "config.invalid"
    public let file: String
    public let key: String?
    public let reason: String

    public init(file: String, key: String?, reason: String) {
        self.file = file
        self.key = key
        self.reason = reason
    }

    public var description: String {
        "\(Self.code): \(file): " + (key.map { "\($0) \(reason)" } ?? reason)
    }
}
