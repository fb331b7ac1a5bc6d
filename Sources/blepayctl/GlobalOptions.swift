import ArgumentParser

/// Global options where a person puts them: `blepayctl --bus X --json request …` reads as
/// `blepayctl request --bus X --json …`. ArgumentParser takes an option only after the command that declares it, and
/// every command that talks to a daemon declares these (`Global`).
enum GlobalOptions {
    static let flags: Set<String> = ["--json"]
    static let valued: Set<String> = ["--bus", "--instance"]

    /// `arguments` (without the program's name) with the global options given before or between the words of the
    /// subcommand moved to just after its full name (`voucher obtain`), so before any `--`.
    static func movedAfterSubcommand(_ arguments: [String], root: any ParsableCommand.Type) -> [String] {
        var moved: [String] = []
        var path: [String] = []
        var command = root
        var rest = arguments[...]
        while let first = rest.first {
            let name = String(first.prefix { $0 != "=" })
            if flags.contains(first) || (valued.contains(name) && first.contains("=")) {
                moved.append(first)
                rest = rest.dropFirst()
            } else if valued.contains(first) {
                moved.append(contentsOf: rest.prefix(2))
                rest = rest.dropFirst(2)
            } else if let subcommand = command.configuration.subcommands.first(where: { $0.configuration.commandName == first }) {
                path.append(first)
                rest = rest.dropFirst()
                command = subcommand
            } else {
                break
            }
        }
        return path + moved + rest
    }
}
